// narad-operator against a real API server (the local platform: etcd,
// kube-apiserver, kube-controller-manager and the node agent running broker
// pods as local processes). The tests share one platform and run in order;
// each says what it leaves behind.
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { type Platform, startPlatform } from "../platform/platform.ts";
import { ensureBinaries } from "../platform/tools.ts";
import { clusterCredentials } from "./credentials.ts";
import { getJson, type OperatorProcess, prepareCluster, startOperator, waitFor } from "./harness.ts";

const log = stderrLog("operator-e2e");
const REPO = resolve(import.meta.dirname, "../..");
const NS = "e2e";
const LEASE_NS = "narad-system";
const BROKER_IMAGE = "ghcr.io/narad/narad:0.1.0";
const READY_TIMEOUT_MS = 240_000;

interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    uid: string;
    generation?: number;
    finalizers?: string[];
    ownerReferences?: Array<{
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
      blockOwnerDeletion?: boolean;
    }>;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}
interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface ClusterStatus {
  phase?: string;
  observedGeneration?: number;
  readyReplicas?: number;
  conditions?: Condition[];
  members?: Array<{ id: string; state: string; address?: string }>;
}
interface PodList {
  items: Array<{ metadata: { name: string; uid: string }; status: { podIP?: string; phase?: string } }>;
}

let platform: Platform;
let logDir: string;
const operators: OperatorProcess[] = [];

function clusterYaml(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name, namespace: NS },
    spec,
  });
}

async function cluster(name: string): Promise<(Obj & { status?: ClusterStatus }) | undefined> {
  return getJson(platform.kubectl, ["-n", NS, "naradcluster", name]);
}

function cond(status: ClusterStatus | undefined, type: string): Condition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

async function waitClusterReady(name: string, generation = 1): Promise<Obj & { status?: ClusterStatus }> {
  return waitFor(
    async () => {
      const c = await cluster(name);
      const ready = cond(c?.status, "Ready")?.status === "True";
      return ready && c?.status?.observedGeneration === generation && c.status.phase === "Running"
        ? c
        : undefined;
    },
    {
      timeoutMs: READY_TIMEOUT_MS,
      what: `NaradCluster ${name} to be Ready at generation ${generation}`,
      intervalMs: 1000,
    },
  );
}

async function pods(clusterName: string): Promise<PodList["items"]> {
  const list = await getJson<PodList>(platform.kubectl, [
    "-n",
    NS,
    "pods",
    "-l",
    `narad.dev/cluster=${clusterName}`,
  ]);
  return list?.items ?? [];
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await getJson<{ spec: { holderIdentity?: string } }>(platform.kubectl, [
    "-n",
    LEASE_NS,
    "lease",
    "narad-operator",
  ]);
  return lease?.spec.holderIdentity || undefined;
}

async function operator(identity: string, env: Record<string, string> = {}): Promise<OperatorProcess> {
  const op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity, logDir, env });
  operators.push(op);
  return op;
}

function ownedNames(c: string): Array<[string, string]> {
  return [
    ["serviceaccount", `${c}-broker`],
    ["role", `${c}-broker`],
    ["rolebinding", `${c}-broker`],
    ["configmap", `${c}-config`],
    ["service", `${c}-headless`],
    ["service", c],
    ["statefulset", c],
    ["poddisruptionbudget", c],
  ];
}

const reconciled = (op: OperatorProcess, kind?: string) =>
  op.lines().filter((l) => l.msg === "reconciled" && (kind === undefined || l["kind"] === kind));

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  const dir = await mkdtemp(join(tmpdir(), "narad-operator-e2e-"));
  logDir = dir;
  platform = await startPlatform({ dir, log, binaries, keep: process.env["NARAD_KEEP"] === "1" });
  await prepareCluster(platform.kubectl, REPO, [NS, LEASE_NS]);
});

afterAll(async () => {
  for (const op of operators) await op.kill("SIGKILL");
  if (process.env["NARAD_KEEP"] === "1") log(`kept ${logDir} (operator logs, platform state)`);
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("narad-operator", () => {
  let a: OperatorProcess;

  it("turns a 3-replica NaradCluster into 3 Ready brokers answering /readyz on their pod IPs", async () => {
    a = await operator("op-a");
    await a.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
    await platform.applyYaml(
      clusterYaml("demo", { replicas: 3, image: BROKER_IMAGE, security: { auth: { enabled: true } } }),
    );
    const c = await waitClusterReady("demo");
    expect(c.status?.readyReplicas).toBe(3);
    expect(c.status?.members?.map((m) => [m.id, m.state])).toEqual([
      ["demo-0", "Active"],
      ["demo-1", "Active"],
      ["demo-2", "Active"],
    ]);
    expect(["Ready", "Progressing", "Degraded", "Stable"].map((t) => cond(c.status, t)?.status)).toEqual([
      "True",
      "False",
      "False",
      "True",
    ]);
    const list = await pods("demo");
    expect(list.map((p) => p.metadata.name).sort()).toEqual(["demo-0", "demo-1", "demo-2"]);
    for (const p of list) {
      expect(p.status.podIP).toMatch(/^127\./);
      const res = await fetch(`http://${p.status.podIP}:7942/readyz`);
      expect(res.status).toBe(200);
      expect(c.status?.members?.find((m) => m.id === p.metadata.name)?.address).toBe(
        `${p.status.podIP}:7942`,
      );
    }
    const metrics = await (await fetch(`${a.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /narad_operator_reconcile_total\{kind="NaradCluster",result="(success|requeue)"\} [1-9]/,
    );
    expect(metrics).toContain("narad_operator_leader 1");
    expect((await fetch(`${a.metricsUrl}/readyz`)).status).toBe(200);
  });

  it("owns every object it made with a blocking controller reference", async () => {
    const c = (await cluster("demo"))!;
    for (const [kind, name] of ownedNames("demo")) {
      const o = await getJson<Obj>(platform.kubectl, ["-n", NS, kind, name]);
      expect(o, `${kind}/${name}`).toBeDefined();
      expect(o?.metadata.ownerReferences, `${kind}/${name}`).toEqual([
        {
          apiVersion: "narad.dev/v1alpha1",
          kind: "NaradCluster",
          name: "demo",
          uid: c.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const sts = await getJson<{ spec: Record<string, unknown> }>(platform.kubectl, [
      "-n",
      NS,
      "statefulset",
      "demo",
    ]);
    expect(sts?.spec["updateStrategy"]).toEqual({ type: "OnDelete" });
    expect(sts?.spec["podManagementPolicy"]).toBe("Parallel");
    const cm = await getJson<{ data: Record<string, string> }>(platform.kubectl, [
      "-n",
      NS,
      "configmap",
      "demo-config",
    ]);
    expect(JSON.parse(cm?.data["narad.json"] ?? "{}")).toMatchObject({ drainTimeoutMs: 60_000 });
  });

  it("the brokers serve /v1 as one cluster: create on one, produce to all, read everything from any", async () => {
    const ips = (await pods("demo")).map((p) => p.status.podIP as string);
    const [first, second, third] = ips as [string, string, string];
    // Auth is on: the admin credentials from the Secret the operator created.
    const auth = (await clusterCredentials(platform.kubectl, NS, "demo"))();
    // POST /v1/topics creates a NaradTopic and waits for the operator's assignments.
    const created = await fetch(`http://${first}:7942/v1/topics`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "Orders_EU", partitions: 3 }),
    });
    expect(created.status).toBe(201);
    const perNode = 40;
    for (const [n, ip] of ips.entries()) {
      for (let i = 0; i < perNode; i++) {
        const r = await fetch(`http://${ip}:7942/v1/topics/Orders_EU/produce?key=k${n}-${i}`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ n, i }),
        });
        expect(r.status).toBe(202);
      }
    }
    const total = perNode * ips.length;
    const readAll = async (ip: string) => {
      const got: unknown[] = [];
      for (let p = 0; p < 3; p++) {
        const r = await fetch(
          `http://${ip}:7942/v1/topics/Orders_EU/records?partition=${p}&offset=0&limit=1000`,
          { headers: auth },
        );
        if (r.status !== 200) return undefined;
        got.push(...((await r.json()) as { records: unknown[] }).records);
      }
      return got.length >= total ? got : undefined;
    };
    const seen = await waitFor(() => readAll(third), {
      timeoutMs: 60_000,
      what: "all messages visible via one broker",
    });
    expect(seen).toHaveLength(total);
    expect(await readAll(second)).toHaveLength(total);
    const topics = await getJson<{
      items: Array<{ spec: { name?: string }; status?: { assignments?: Array<{ owner: string }> } }>;
    }>(platform.kubectl, ["-n", NS, "naradtopics"]);
    const orders = topics?.items.find((t) => t.spec.name === "Orders_EU");
    // Partitions are spread over the brokers, so reads above crossed the cluster RPC.
    expect(new Set(orders?.status?.assignments?.map((a) => a.owner)).size).toBe(3);
  });

  it("changing spec.image with the rollout paused updates the StatefulSet template and deletes no pod", async () => {
    // With rolls, an image change restarts every pod (roll.e2e.test.ts); paused, none.
    const before = new Map((await pods("demo")).map((p) => [p.metadata.name, p.metadata.uid]));
    await platform.kubectl([
      "-n",
      NS,
      "patch",
      "naradcluster",
      "demo",
      "--type=merge",
      "-p",
      '{"spec":{"image":"ghcr.io/narad/narad:0.2.0","rollout":{"paused":true}}}',
    ]);
    await waitFor(
      async () => {
        const sts = await getJson<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(
          platform.kubectl,
          ["-n", NS, "statefulset", "demo"],
        );
        return sts?.spec.template.spec.containers[0]?.image === "ghcr.io/narad/narad:0.2.0";
      },
      { timeoutMs: 60_000, what: "the StatefulSet template to carry the new image" },
    );
    const c = await waitFor(
      async () => {
        const x = await cluster("demo");
        return x?.status?.observedGeneration === 2 &&
          cond(x.status, "Progressing")?.reason === "RolloutPaused"
          ? x
          : undefined;
      },
      { timeoutMs: 60_000, what: "Progressing=RolloutPaused at generation 2" },
    );
    expect(cond(c.status, "Ready")?.status).toBe("True");
    // give a would-be roll time to act
    await new Promise((r) => setTimeout(r, 5_000));
    const after = new Map((await pods("demo")).map((p) => [p.metadata.name, p.metadata.uid]));
    expect(after).toEqual(before);
    const events = await platform.kubectl([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=TemplateUpdated",
      "-o",
      "json",
    ]);
    expect(events.stdout).toContain("ghcr.io/narad/narad:0.1.0 → ghcr.io/narad/narad:0.2.0");
  });

  it("the API server rejects invalid specs with clear messages", async () => {
    const zero = await platform.kubectl(["apply", "-f", "-"], {
      input: clusterYaml("bad", { replicas: 0 }),
      allowFailure: true,
    });
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toMatch(/spec\.replicas.*greater than or equal to 1/);
    const topic = JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "too-many", namespace: NS },
      spec: { cluster: "demo", partitions: 500 },
    });
    const many = await platform.kubectl(["apply", "-f", "-"], { input: topic, allowFailure: true });
    expect(many.code).not.toBe(0);
    expect(many.stderr).toMatch(/spec\.partitions.*less than or equal to 108/);
    await platform.applyYaml(
      clusterYaml("sc", { replicas: 1, image: BROKER_IMAGE, storage: { storageClassName: "narad-local" } }),
    );
    const change = await platform.kubectl(
      [
        "-n",
        NS,
        "patch",
        "naradcluster",
        "sc",
        "--type=merge",
        "-p",
        '{"spec":{"storage":{"storageClassName":"other"}}}',
      ],
      { allowFailure: true },
    );
    expect(change.code).not.toBe(0);
    expect(change.stderr).toContain("storageClassName is immutable");
    await platform.kubectl(["-n", NS, "delete", "naradcluster", "sc", "--wait=false"]);
  });

  it("a NaradTopic gets assignments, and its deletion waits for every broker's confirmation", async () => {
    await platform.applyYaml(
      JSON.stringify({
        apiVersion: "narad.dev/v1alpha1",
        kind: "NaradTopic",
        metadata: { name: "orders", namespace: NS },
        spec: { cluster: "demo", partitions: 6 },
      }),
    );
    const t = await waitFor(
      async () => {
        const x = await getJson<
          Obj & { status?: { assignments?: Array<{ partition: number; owner: string }> } }
        >(platform.kubectl, ["-n", NS, "naradtopic", "orders"]);
        return (x?.status?.assignments?.length ?? 0) === 6 ? x : undefined;
      },
      { timeoutMs: 60_000, what: "assignments for topic orders" },
    );
    expect(t.metadata.finalizers).toContain("narad.dev/topic-data");
    const owners = new Map<string, number>();
    for (const a of t.status?.assignments ?? []) owners.set(a.owner, (owners.get(a.owner) ?? 0) + 1);
    expect([...owners.keys()].sort()).toEqual(["demo-0", "demo-1", "demo-2"]);
    expect([...owners.values()]).toEqual([2, 2, 2]);

    // Freeze broker demo-1 so it cannot confirm; the topic must wait for it.
    const pid = Number(
      (await readFile(join(platform.dir, "node", "pods", `${NS}_demo-1`, "narad.pid"), "utf8")).trim(),
    );
    process.kill(pid, "SIGSTOP");
    try {
      await platform.kubectl(["-n", NS, "delete", "naradtopic", "orders", "--wait=false"]);
      const waiting = await waitFor(
        async () => {
          const x = await getJson<Obj & { status?: { conditions?: Condition[] } }>(platform.kubectl, [
            "-n",
            NS,
            "naradtopic",
            "orders",
          ]);
          const c = x?.status?.conditions?.find((k) => k.type === "Ready");
          // The first pending condition can be written before demo-0 and demo-2
          // have seen the deletion through their watch (they answer 409 until
          // then); wait until only the frozen broker is left.
          const onlyFrozen =
            c?.reason === "DeletionPending" &&
            c.message.includes("demo-1") &&
            !c.message.includes("demo-0") &&
            !c.message.includes("demo-2");
          return onlyFrozen ? c : undefined;
        },
        { timeoutMs: 60_000, what: "topic deletion to wait on demo-1 alone" },
      );
      expect(waiting.message).toMatch(/1\/3 member/);
      expect(await getJson(platform.kubectl, ["-n", NS, "naradtopic", "orders"])).toBeDefined();
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await waitFor(
      async () => (await getJson(platform.kubectl, ["-n", NS, "naradtopic", "orders"])) === undefined,
      {
        timeoutMs: 90_000,
        what: "topic orders to be deleted once demo-1 confirms",
      },
    );
    const events = await platform.kubectl([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=DataDeleted",
      "-o",
      "json",
    ]);
    expect(events.stdout).toContain("all 3 member(s) confirmed");
  });

  it("an operator killed with SIGKILL mid-reconcile converges after a restart", async () => {
    await platform.applyYaml(clusterYaml("crash", { replicas: 1, image: BROKER_IMAGE }));
    await a.waitForLine(
      (l) => l["cluster"] === `${NS}/crash` && /^created /.test(l.msg),
      "a first create for cluster crash",
    );
    await a.kill("SIGKILL");
    // A new replica takes the lease once the dead leader's lease expires (15 s).
    const b = await operator("op-b");
    await b.waitForLine((l) => l.msg === "leading: reconciling", "op-b to lead", 60_000);
    expect(await leaseHolder()).toBe("op-b");
    const c = await waitClusterReady("crash");
    expect(c.status?.members?.map((m) => m.state)).toEqual(["Active"]);
    for (const [kind, name] of ownedNames("crash")) {
      expect(await getJson(platform.kubectl, ["-n", NS, kind, name]), `${kind}/${name}`).toBeDefined();
    }
    // the unaffected cluster is still fine under the new leader
    expect(cond((await cluster("demo"))?.status, "Ready")?.status).toBe("True");
  });

  it("with two replicas only the lease holder reconciles; the other takes over when it stops", async () => {
    const b = operators.find((o) => o.identity === "op-b")!;
    const c = await operator("op-c");
    await c.waitForLine((l) => l.msg.startsWith("leader is now"), "op-c to observe the leader");
    await waitFor(() => c.lines().filter((l) => l.msg === "informer synced").length >= 10, {
      timeoutMs: 60_000,
      what: "op-c informers to sync",
    });
    expect(await leaseHolder()).toBe("op-b");
    const cBefore = reconciled(c).length;
    const bBefore = reconciled(b).length;
    await platform.kubectl([
      "-n",
      NS,
      "patch",
      "naradcluster",
      "crash",
      "--type=merge",
      "-p",
      '{"spec":{"broker":{"logLevel":"debug"}}}',
    ]);
    await waitFor(async () => (await cluster("crash"))?.status?.observedGeneration === 2, {
      timeoutMs: 60_000,
      what: "crash observed at generation 2",
    });
    // The status write and b's "reconciled" line race through two pipes; give the line a moment.
    await waitFor(() => reconciled(b).length > bBefore, {
      timeoutMs: 10_000,
      what: "op-b to log a reconcile after the change",
    });
    expect(reconciled(c)).toHaveLength(cBefore);
    expect(cBefore).toBe(0);
    expect((await fetch(`${c.metricsUrl}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${c.metricsUrl}/metrics`)).text()).toContain("narad_operator_leader 0");

    // SIGTERM releases the lease: the standby leads within a retry period or two.
    await b.kill("SIGTERM");
    expect(b.lines().some((l) => l.msg === "leader election: released the lease")).toBe(true);
    await c.waitForLine((l) => l.msg === "leading: reconciling", "op-c to lead after op-b stops", 15_000);
    expect(await leaseHolder()).toBe("op-c");
    await waitFor(() => reconciled(c).length > 0, { timeoutMs: 60_000, what: "op-c to reconcile" });
  });

  it("deleting a NaradCluster garbage-collects everything it owned", async () => {
    await platform.kubectl(["-n", NS, "delete", "naradcluster", "crash", "--wait=false"]);
    await waitFor(
      async () => {
        for (const [kind, name] of ownedNames("crash")) {
          if (await getJson(platform.kubectl, ["-n", NS, kind, name])) return false;
        }
        return (await pods("crash")).length === 0 && (await cluster("crash")) === undefined;
      },
      { timeoutMs: 120_000, what: "cluster crash and everything it owned to be gone", intervalMs: 1000 },
    );
  });
});
