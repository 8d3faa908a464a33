// helm lint + helm template for charts/narad-operator, and the rendered chart
// compared with deploy/narad-operator.yaml (both come from install.ts data).
// Skipped, saying so, when no helm binary is around.

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../operator/src/config.ts";
import { OPERATOR_NAMESPACE, OPERATOR_VERSION, renderBundle } from "../operator/src/install/install.ts";
import { allCrds } from "../packages/api/src/v1alpha1/crds.ts";
import { REPO_ROOT } from "./gen-crds.ts";

function findHelm(): string | undefined {
  const candidates = [
    process.env["HELM"],
    join(homedir(), ".cache/narad-k8s/tools/layer-2.2.2/helm/helm"),
    "/tmp/kubectl-layer/helm/helm",
  ];
  for (const c of candidates) if (c && existsSync(c)) return c;
  try {
    return execFileSync("sh", ["-c", "command -v helm"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const helm = findHelm();
const chart = join(REPO_ROOT, "charts/narad-operator");
if (!helm)
  console.warn(
    "chart.test.ts: no helm binary (set HELM, or fetch it via e2e tools); skipping helm lint/template",
  );

type Obj = { kind: string; metadata: { name: string; labels?: unknown }; [k: string]: unknown };

function run(args: string[]): string {
  return execFileSync(helm!, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function render(set: string[] = []): Obj[] {
  const out = run([
    "template",
    "narad-operator",
    chart,
    "-n",
    OPERATOR_NAMESPACE,
    ...set.flatMap((s) => ["--set", s]),
  ]);
  return (loadAll(out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
}

/** Drops labels: Helm adds helm.sh/chart and managed-by, the bundle does not. */
function unlabel(o: unknown): unknown {
  if (Array.isArray(o)) return o.map(unlabel);
  if (o === null || typeof o !== "object") return o;
  return Object.fromEntries(
    Object.entries(o)
      .filter(([k]) => k !== "labels")
      .map(([k, v]) => [k, unlabel(v)]),
  );
}

describe.skipIf(!helm)("helm chart charts/narad-operator", () => {
  it("helm lint --strict is clean", () => {
    const out = run(["lint", "--strict", chart]);
    expect(out).toContain("0 chart(s) failed");
    expect(out).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it("helm template (defaults) renders the same objects as deploy/narad-operator.yaml", () => {
    const fromChart = render();
    const bundle = renderBundle(allCrds() as unknown as Record<string, unknown>[]) as Obj[];
    const key = (o: Obj) => `${o.kind}/${o.metadata.name}`;
    const withoutNsAndCrds = bundle.filter(
      (o) => o.kind !== "Namespace" && o.kind !== "CustomResourceDefinition",
    );
    expect(fromChart.map(key).sort()).toEqual(withoutNsAndCrds.map(key).sort());
    for (const b of withoutNsAndCrds) {
      const c = fromChart.find((o) => key(o) === key(b));
      expect(unlabel(c), key(b)).toEqual(unlabel(b));
    }
  });

  it("never sets a container command (the image / local platform decides what runs)", () => {
    const d = render().find((o) => o.kind === "Deployment")!;
    expect(JSON.stringify(d)).not.toContain('"command"');
  });

  it("optional parts: ServiceMonitor on, leader election off, watched namespaces", () => {
    const objs = render([
      "metrics.serviceMonitor.enabled=true",
      "leaderElection.enabled=false",
      "watchNamespaces={team-a,team-b}",
    ]);
    expect(objs.map((o) => o.kind)).toContain("ServiceMonitor");
    // No leader-election Role; with watchNamespaces the operator's rights are
    // a Role (and RoleBinding) per watched namespace, and a ClusterRole only
    // for what is cluster-scoped.
    const roles = objs.filter((o) => o.kind === "Role") as Array<{
      metadata: { name: string; namespace?: string };
    }>;
    expect(roles.map((r) => r.metadata.namespace).sort()).toEqual(["team-a", "team-b"]);
    expect(roles.some((r) => r.metadata.name.endsWith("-leader-election"))).toBe(false);
    expect(objs.filter((o) => o.kind === "RoleBinding").length).toBe(2);
    const env = JSON.stringify(objs.find((o) => o.kind === "Deployment"));
    expect(env).toContain('{"name":"NARAD_OPERATOR_WATCH_NAMESPACES","value":"team-a,team-b"}');
    expect(env).toContain('{"name":"NARAD_OPERATOR_LEADER_ELECT","value":"false"}');
  });

  it("serviceAccount.create=false and rbac.create=false: the operator runs as the named account, nothing RBAC is created", () => {
    const objs = render(["serviceAccount.create=false", "serviceAccount.name=ops", "rbac.create=false"]);
    const kinds = objs.map((o) => o.kind);
    for (const kind of ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"])
      expect(kinds).not.toContain(kind);
    const d = objs.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { serviceAccountName: string } } };
    };
    expect(d.spec.template.spec.serviceAccountName).toBe("ops");
    // Created, with a name: the bindings name it too.
    const named = render(["serviceAccount.name=ops"]);
    expect(named.find((o) => o.kind === "ServiceAccount")?.metadata.name).toBe("ops");
    const binding = named.find((o) => o.kind === "ClusterRoleBinding") as unknown as {
      subjects: { name: string }[];
    };
    expect(binding.subjects.map((s) => s.name)).toEqual(["ops"]);
  });

  it("a PodDisruptionBudget by default, selecting the operator pods; off with podDisruptionBudget.enabled=false", () => {
    const objs = render(["podDisruptionBudget.maxUnavailable=50%"]);
    const pdb = objs.find((o) => o.kind === "PodDisruptionBudget") as unknown as {
      spec: { maxUnavailable: unknown; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.maxUnavailable).toBe("50%");
    const d = objs.find((o) => o.kind === "Deployment") as unknown as {
      spec: { selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.selector.matchLabels).toEqual(d.spec.selector.matchLabels);
    expect(render(["podDisruptionBudget.enabled=false"]).map((o) => o.kind)).not.toContain(
      "PodDisruptionBudget",
    );
  });

  it("extraEnv, extraVolumes and extraVolumeMounts reach the Deployment", () => {
    const objs = render([
      "extraEnv[0].name=HTTPS_PROXY",
      "extraEnv[0].value=http://proxy:3128",
      "extraVolumes[0].name=ca",
      "extraVolumes[0].configMap.name=corp-ca",
      "extraVolumeMounts[0].name=ca",
      "extraVolumeMounts[0].mountPath=/etc/ssl/corp",
    ]);
    const pod = (
      objs.find((o) => o.kind === "Deployment") as unknown as {
        spec: {
          template: {
            spec: { volumes: unknown[]; containers: { env: unknown[]; volumeMounts: unknown[] }[] };
          };
        };
      }
    ).spec.template.spec;
    expect(pod.containers[0]!.env).toContainEqual({ name: "HTTPS_PROXY", value: "http://proxy:3128" });
    expect(pod.volumes).toEqual([{ name: "ca", configMap: { name: "corp-ca" } }]);
    expect(pod.containers[0]!.volumeMounts).toEqual([{ name: "ca", mountPath: "/etc/ssl/corp" }]);
  });

  it("extraArgs become the operator container's args, which the operator parses as flags", () => {
    const container = (set: string[]) =>
      (
        render(set).find((o) => o.kind === "Deployment") as unknown as {
          spec: { template: { spec: { containers: { args?: string[] }[] } } };
        }
      ).spec.template.spec.containers[0]!;
    // None by default: the image's entrypoint runs with no arguments.
    expect(container([]).args).toBeUndefined();
    // (--set splits on commas: a literal one is escaped.)
    const args = container(["extraArgs[0]=--log-level=debug", "extraArgs[1]=--watch-namespaces=a\\,b"]).args;
    expect(args).toEqual(["--log-level=debug", "--watch-namespaces=a,b"]);
    // The operator reads them as it would in the container (flags win over the chart's env).
    expect(loadConfig({ NARAD_OPERATOR_LOG_LEVEL: "info" }, args)).toMatchObject({
      logLevel: "debug",
      watchNamespaces: ["a", "b"],
    });
  });

  it("values.schema.json refuses unknown keys and values of the wrong type", () => {
    const refused = (set: string): string => {
      try {
        render([set]);
        return "rendered";
      } catch (err) {
        return String((err as { stderr?: string }).stderr ?? err);
      }
    };
    expect(refused("replica=3")).toMatch(/schema.*replica|additional properties.*replica/is);
    expect(refused("logLevel=loud")).toMatch(/logLevel/);
    expect(refused("replicas=-1")).toMatch(/replicas/);
    expect(refused("podDisruptionBudget.maxUnavailable=half")).toMatch(/maxUnavailable/);
    expect(refused("extraArgs=--log-level=debug")).toMatch(/extraArgs/);
    expect(refused("extraArgs[0].name=x")).toMatch(/extraArgs/);
  });

  it("helm package makes a chart archive that installs the same objects", () => {
    const dir = mkdtempSync(join(tmpdir(), "narad-chart-"));
    try {
      run(["package", chart, "-d", dir]);
      const files = readdirSync(dir);
      expect(files).toEqual([`narad-operator-${OPERATOR_VERSION}.tgz`]);
      const fromArchive = run(["template", "narad-operator", join(dir, files[0]!), "-n", OPERATOR_NAMESPACE]);
      expect(fromArchive).toBe(run(["template", "narad-operator", chart, "-n", OPERATOR_NAMESPACE]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
