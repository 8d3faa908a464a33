// Least-privilege RBAC, checked by the API server's own authorizer: install
// the operator bundle's RBAC (deploy/narad-operator.yaml) and a cluster's
// broker Role (the operator's own builders) on a real kube-apiserver, then
// ask `kubectl auth can-i --as=<service account>` for every permission the
// operator and the brokers need (yes) and for ones they must not have (no).
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROKER_ROLE_RULES,
  LEADER_ELECTION_ROLE_RULES,
  OPERATOR_CLUSTER_ROLE_RULES,
  type PolicyRule,
} from "../../operator/src/install/install.ts";
import { resourceNames } from "../../operator/src/specs/labels.ts";
import { roleBindingSpec, roleSpec, serviceAccountSpec } from "../../operator/src/specs/rbac.ts";
import type { NaradCluster } from "../../packages/api/src/v1alpha1/types.ts";
import { getJson } from "../operator/harness.ts";
import { stderrLog } from "../platform/log.ts";
import { type Platform, startPlatform } from "../platform/platform.ts";
import { ensureBinaries } from "../platform/tools.ts";

const log = stderrLog("rbac-e2e");
const REPO = resolve(import.meta.dirname, "../..");
const OPERATOR = "system:serviceaccount:narad-system:narad-operator";
const NS = "shop";
const OTHER_NS = "elsewhere";
const BROKER = `system:serviceaccount:${NS}:demo-broker`;

let platform: Platform;

/** One `kubectl auth can-i` question: verb, resource (group-qualified: "roles.rbac.authorization.k8s.io"), namespace. */
interface Ask {
  verb: string;
  resource: string;
  namespace?: string;
  subresource?: string;
  /** One object by name (can-i verb resource/name). */
  name?: string;
}

async function canI(as: string, q: Ask): Promise<boolean> {
  const args = [
    "auth",
    "can-i",
    q.verb,
    q.name === undefined ? q.resource : `${q.resource}/${q.name}`,
    `--as=${as}`,
  ];
  if (q.subresource !== undefined) args.push(`--subresource=${q.subresource}`);
  args.push(q.namespace === undefined ? "--all-namespaces" : `--namespace=${q.namespace}`);
  const r = await platform.kubectl(args, { allowFailure: true });
  const answer = r.stdout.trim();
  if (answer !== "yes" && answer !== "no")
    throw new Error(`kubectl ${args.join(" ")}: ${r.stderr || answer}`);
  return answer === "yes";
}

/** Asks in parallel (a few at a time: each is a kubectl process), returning "verb resource@ns → yes/no" lines. */
async function answers(as: string, asks: Ask[]): Promise<Map<string, boolean>> {
  const out = new Map<string, boolean>();
  const queue = [...asks];
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let q = queue.shift(); q !== undefined; q = queue.shift()) {
        out.set(label(q), await canI(as, q));
      }
    }),
  );
  return out;
}

function label(q: Ask): string {
  return `${q.verb} ${q.resource}${q.name ? `/${q.name}` : ""}${q.subresource ? `/${q.subresource}` : ""}@${q.namespace ?? "*"}`;
}

/** Every (verb, resource) a rule list grants, as can-i questions in a namespace. */
function asksFor(rules: PolicyRule[], namespace: string): Ask[] {
  const asks: Ask[] = [];
  for (const r of rules) {
    for (const group of r.apiGroups) {
      for (const res of r.resources) {
        const [base, sub] = res.split("/") as [string, string | undefined];
        const resource = group === "" ? base : `${base}.${group}`;
        for (const verb of r.verbs)
          asks.push({ verb, resource, namespace, ...(sub ? { subresource: sub } : {}) });
      }
    }
  }
  return asks;
}

function expectAll(got: Map<string, boolean>, want: boolean): void {
  const wrong = [...got].filter(([, v]) => v !== want).map(([k]) => k);
  expect(wrong, `expected ${want ? "allowed" : "denied"}`).toEqual([]);
}

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  const dir = await mkdtemp(join(tmpdir(), "narad-rbac-e2e-"));
  // No node agent: only the API server's authorizer is under test.
  platform = await startPlatform({
    dir,
    log,
    binaries,
    nodeAgent: false,
    keep: process.env["NARAD_KEEP"] === "1",
  });
  const bundle = loadAll(await readFile(join(REPO, "deploy/narad-operator.yaml"), "utf8")) as Array<{
    kind: string;
  }>;
  // Everything but the Deployment: no operator runs here.
  const docs = bundle.filter((d) => d !== null && d.kind !== "Deployment");
  await platform.applyYaml(docs.map((d) => JSON.stringify(d)).join("\n---\n"));
  await platform.kubectl(["wait", "--for=condition=Established", "crd/naradclusters.narad.dev"]);
  for (const ns of [NS, OTHER_NS]) await platform.kubectl(["create", "namespace", ns]);
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: "demo", namespace: NS },
      spec: {},
    }),
  );
}, 600_000);

afterAll(async () => {
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("operator RBAC", () => {
  it("the operator's service account holds every permission it needs, in any namespace", async () => {
    // ServiceMonitors are not served here (no prometheus-operator CRDs), and
    // kubectl cannot resolve an unserved resource: those rules are left out.
    const served = OPERATOR_CLUSTER_ROLE_RULES.filter((r) => !r.apiGroups.includes("monitoring.coreos.com"));
    expect(served.length).toBe(OPERATOR_CLUSTER_ROLE_RULES.length - 1);
    expectAll(await answers(OPERATOR, asksFor(served, NS)), true);
    expectAll(await answers(OPERATOR, asksFor(LEADER_ELECTION_ROLE_RULES, "narad-system")), true);
  });

  it("and nothing more: no Secret listing, no exec, no cluster-scoped writes, no leases elsewhere", async () => {
    // patch on Secrets: the API users Secret (NaradUsers; and the broker Role grants it).
    const denied: Ask[] = [
      ...["list", "watch", "update", "delete"].map((verb) => ({
        verb,
        resource: "secrets",
        namespace: NS,
      })),
      { verb: "create", resource: "pods", subresource: "exec", namespace: NS },
      { verb: "create", resource: "pods", subresource: "portforward", namespace: NS },
      { verb: "create", resource: "pods", namespace: NS },
      // planned restarts are Evictions (the PodDisruptionBudget is checked): no plain pod delete
      { verb: "delete", resource: "pods", namespace: NS },
      { verb: "deletecollection", resource: "pods", namespace: NS },
      { verb: "create", resource: "deployments.apps", namespace: NS },
      { verb: "update", resource: "statefulsets.apps", namespace: NS },
      { verb: "delete", resource: "nodes" },
      { verb: "create", resource: "clusterroles.rbac.authorization.k8s.io" },
      { verb: "create", resource: "clusterrolebindings.rbac.authorization.k8s.io" },
      { verb: "bind", resource: "roles.rbac.authorization.k8s.io", namespace: NS },
      { verb: "escalate", resource: "roles.rbac.authorization.k8s.io", namespace: NS },
      { verb: "create", resource: "naradclusters.narad.dev", namespace: NS },
      { verb: "delete", resource: "naradclusters.narad.dev", namespace: NS },
      { verb: "update", resource: "leases.coordination.k8s.io", namespace: NS },
      { verb: "delete", resource: "leases.coordination.k8s.io", namespace: "narad-system" },
      { verb: "create", resource: "customresourcedefinitions.apiextensions.k8s.io" },
      { verb: "create", resource: "serviceaccounts", subresource: "token", namespace: NS },
      { verb: "impersonate", resource: "users" },
      { verb: "*", resource: "*", namespace: NS },
    ];
    expectAll(await answers(OPERATOR, denied), false);
  });

  it("can create the brokers' Role (it holds every permission the Role grants: no escalation)", async () => {
    const c = await getJson<NaradCluster>(platform.kubectl, ["-n", NS, "naradcluster", "demo"]);
    if (c === undefined) throw new Error("NaradCluster demo missing");
    const cluster = { ...c, apiVersion: "narad.dev/v1alpha1", kind: "NaradCluster" } as NaradCluster;
    const objects = [serviceAccountSpec(cluster), roleSpec(cluster), roleBindingSpec(cluster)];
    // As the operator: the API server refuses a Role granting more than its creator holds.
    const r = await platform.kubectl(["apply", "--server-side", `--as=${OPERATOR}`, "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
    expect(r.stdout).toContain("role.rbac.authorization.k8s.io/demo-broker serverside-applied");
  });
});

describe("broker RBAC", () => {
  it("a cluster's brokers may read the cluster and manage topics in their namespace", async () => {
    expectAll(await answers(BROKER, asksFor(BROKER_ROLE_RULES, NS)), true);
  });

  it("and keep the producer-id registry in their own ConfigMap, and no other", async () => {
    const registry = resourceNames("demo").producerRegistry;
    const allowed: Ask[] = [
      { verb: "create", resource: "configmaps", namespace: NS },
      ...["get", "list", "watch", "patch"].map((verb) => ({
        verb,
        resource: "configmaps",
        name: registry,
        namespace: NS,
      })),
    ];
    expectAll(await answers(BROKER, allowed), true);
    const denied: Ask[] = [
      ...["get", "patch", "update", "delete"].map((verb) => ({
        verb,
        resource: "configmaps",
        name: resourceNames("demo").configMap,
        namespace: NS,
      })),
      { verb: "update", resource: "configmaps", name: registry, namespace: NS },
      { verb: "delete", resource: "configmaps", name: registry, namespace: NS },
      { verb: "get", resource: "configmaps", name: registry, namespace: OTHER_NS },
    ];
    expectAll(await answers(BROKER, denied), false);
  });

  it("and patch their own cluster's scale subresource (a decommission request), nothing more of it", async () => {
    const scale = { resource: "naradclusters.narad.dev", subresource: "scale" };
    expectAll(await answers(BROKER, [{ verb: "patch", ...scale, name: "demo", namespace: NS }]), true);
    const denied: Ask[] = [
      { verb: "get", ...scale, name: "demo", namespace: NS },
      { verb: "update", ...scale, name: "demo", namespace: NS },
      { verb: "patch", ...scale, name: "other", namespace: NS },
      { verb: "patch", ...scale, namespace: NS },
      { verb: "patch", ...scale, name: "demo", namespace: OTHER_NS },
      { verb: "patch", resource: "naradclusters.narad.dev", name: "demo", namespace: NS },
      { verb: "update", resource: "naradclusters.narad.dev", name: "demo", namespace: NS },
    ];
    expectAll(await answers(BROKER, denied), false);
  });

  it("and the API users Secret: get and patch of that one name, nothing more", async () => {
    const secret = resourceNames("demo").apiUsers;
    const allowed: Ask[] = ["get", "patch"].map((verb) => ({
      verb,
      resource: "secrets",
      name: secret,
      namespace: NS,
    }));
    expectAll(await answers(BROKER, allowed), true);
    const denied: Ask[] = [
      ...["list", "watch", "update", "delete"].map((verb) => ({
        verb,
        resource: "secrets",
        name: secret,
        namespace: NS,
      })),
      { verb: "create", resource: "secrets", namespace: NS },
      { verb: "get", resource: "secrets", name: "demo-users", namespace: NS },
      { verb: "patch", resource: "secrets", name: "demo-cluster-secret", namespace: NS },
      { verb: "get", resource: "secrets", name: secret, namespace: OTHER_NS },
    ];
    expectAll(await answers(BROKER, denied), false);
  });

  it("and nothing else: not another namespace, no Secrets, no status writes but a topic's (the ISR), no pods", async () => {
    const denied: Ask[] = [
      ...asksFor(BROKER_ROLE_RULES, OTHER_NS),
      { verb: "get", resource: "secrets", namespace: NS },
      { verb: "list", resource: "secrets", namespace: NS },
      { verb: "get", resource: "secrets", namespace: OTHER_NS },
      { verb: "patch", resource: "naradclusters.narad.dev", subresource: "status", namespace: NS },
      { verb: "update", resource: "naradtopics.narad.dev", subresource: "status", namespace: NS },
      { verb: "update", resource: "naradclusters.narad.dev", subresource: "status", namespace: NS },
      { verb: "create", resource: "naradclusters.narad.dev", namespace: NS },
      { verb: "patch", resource: "naradclusters.narad.dev", namespace: NS },
      { verb: "list", resource: "pods", namespace: NS },
      { verb: "create", resource: "pods", subresource: "exec", namespace: NS },
      { verb: "get", resource: "configmaps", namespace: NS },
      { verb: "delete", resource: "statefulsets.apps", namespace: NS },
      { verb: "create", resource: "roles.rbac.authorization.k8s.io", namespace: NS },
      { verb: "delete", resource: "nodes" },
      { verb: "list", resource: "naradtopics.narad.dev" }, // cluster-wide
    ];
    expectAll(await answers(BROKER, denied), false);
  });
});

describe("chart", () => {
  it("renders the same ClusterRole rules as the bundle", async () => {
    const r = await platform.helm([
      "template",
      "narad-operator",
      join(REPO, "charts/narad-operator"),
      "-n",
      "narad-system",
    ]);
    const rendered = (loadAll(r.stdout) as Array<{ kind?: string; rules?: unknown } | null>).filter(
      (d) => d?.kind === "ClusterRole",
    );
    expect(rendered).toHaveLength(1);
    expect(rendered[0]?.rules).toEqual(JSON.parse(JSON.stringify(OPERATOR_CLUSTER_ROLE_RULES)));
  });
});
