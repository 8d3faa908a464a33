// What a user applies, checked by a real API server: every file of
// examples/ as written, the chart rendered with its defaults and with each
// optional part, and deploy/narad-operator.yaml, all with a server-side
// dry run and strict field validation against the CRDs and the built-in
// Kubernetes schemas. Only the control plane runs (no node agent): nothing
// here needs a pod to start.

import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../platform/control-plane.ts";
import { type CommandRunner, commandRunner } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import { ensureBinaries } from "../platform/tools.ts";

const REPO = resolve(import.meta.dirname, "../..");
const log = stderrLog("manifests-e2e");
const chart = join(REPO, "charts/narad-operator");
const examples = readdirSync(join(REPO, "examples"))
  .filter((f) => f.endsWith(".yaml"))
  .sort();

let cp: ControlPlane;
let kubectl: CommandRunner;
let helm: CommandRunner;

/** Server-side apply, dry run, unknown or duplicate fields refused; "" when accepted, else the error. */
async function dryRun(args: string[], input?: string): Promise<string> {
  const r = await kubectl(
    ["apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=e2e", ...args],
    { allowFailure: true, ...(input === undefined ? {} : { input }) },
  );
  return r.code === 0 ? "" : r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`;
}

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  cp = await startControlPlane({ dir: await mkdtemp(join(tmpdir(), "narad-manifests-e2e-")), log, binaries });
  kubectl = commandRunner(binaries.kubectl, cp.kubeconfigPath);
  helm = commandRunner(binaries.helm, cp.kubeconfigPath);
  await kubectl(["apply", "--server-side", "-f", join(REPO, "crds")]);
  await kubectl([
    "wait",
    "--for=condition=Established",
    "crd/naradclusters.narad.dev",
    "crd/naradtopics.narad.dev",
    "crd/naradusers.narad.dev",
  ]);
  for (const ns of ["narad-system", "team-a", "team-b"]) await kubectl(["create", "namespace", ns]);
});

afterAll(async () => {
  await cp?.stop();
});

describe("examples/ applies as written", () => {
  it("strict validation is on: an unknown field is refused", async () => {
    const bad =
      "apiVersion: narad.dev/v1alpha1\nkind: NaradCluster\nmetadata: {name: x}\nspec: {replicaz: 3}\n";
    expect(await dryRun(["-n", "default", "-f", "-"], bad)).toMatch(/replicaz/);
  });

  it.each(examples)("examples/%s", async (file) => {
    const docs = (loadAll(readFileSync(join(REPO, "examples", file), "utf8")) as unknown[]).filter(
      (d) => d !== null,
    );
    expect(docs.length).toBeGreaterThan(0);
    expect(await dryRun(["-n", "default", "-f", join(REPO, "examples", file)])).toBe("");
  });
});

describe("the chart renders objects the API server accepts", () => {
  const valueSets: Record<string, string[]> = {
    defaults: [],
    "own ServiceAccount, no RBAC": [
      "serviceAccount.create=false",
      "serviceAccount.name=ops",
      "rbac.create=false",
    ],
    "watched namespaces": ["watchNamespaces={team-a,team-b}", "leaderElection.enabled=false", "replicas=1"],
    "extra env, volumes, PDB as a percentage": [
      "extraEnv[0].name=HTTPS_PROXY",
      "extraEnv[0].value=http://proxy:3128",
      "extraVolumes[0].name=ca",
      "extraVolumes[0].configMap.name=corp-ca",
      "extraVolumeMounts[0].name=ca",
      "extraVolumeMounts[0].mountPath=/etc/ssl/corp",
      "podDisruptionBudget.maxUnavailable=50%",
      "serviceAccount.annotations.example\\.com/role=operator",
    ],
    "no PodDisruptionBudget": ["podDisruptionBudget.enabled=false"],
    // (The ServiceMonitor and PrometheusRule need the Prometheus Operator's CRDs, not installed here.)
    "Grafana dashboard ConfigMap": ["metrics.grafanaDashboard.enabled=true"],
  };

  it.each(Object.keys(valueSets))("%s", async (name) => {
    const rendered = (
      await helm([
        "template",
        "narad-operator",
        chart,
        "-n",
        "narad-system",
        ...valueSets[name]!.flatMap((s) => ["--set", s]),
      ])
    ).stdout;
    const kinds = (loadAll(rendered) as ({ kind: string } | null)[])
      .filter((d) => d !== null)
      .map((d) => d.kind);
    expect(kinds).toContain("Deployment");
    // Every object names its namespace (the release namespace, or a watched one).
    expect(await dryRun(["-f", "-"], rendered)).toBe("");
  });

  it("deploy/narad-operator.yaml (the kubectl apply bundle)", async () => {
    expect(await dryRun(["-f", join(REPO, "deploy/narad-operator.yaml")])).toBe("");
  });
});
