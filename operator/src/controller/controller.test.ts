import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { NaradCluster, NaradTopic } from "../../../packages/api/src/v1alpha1/types.ts";
import { FakeBrokerClient } from "../broker-client/fake.ts";
import { guardedBrokerClient } from "../broker-client/guarded.ts";
import { AbortedError, guardedApi } from "../kube/api.ts";
import { MemoryRecorder } from "../kube/events.ts";
import { ManualClock } from "../kube/manual-clock.ts";
import { MemoryStorageApi } from "../kube/storage-api.ts";
import { OperatorMetrics } from "../metrics.ts";
import { getCondition } from "../plan/conditions.ts";
import { reconcileCluster } from "./cluster/reconcile.ts";
import { ControllerMemory, type ReconcileDeps } from "./deps.ts";
import { ApiError, FakeKube } from "./fake-kube.ts";
import { reconcileTopic } from "./topic/reconcile.ts";

const NS = "ns1";

function setup(spec: NaradCluster["spec"] = { replicas: 3, image: "ghcr.io/narad/narad:1.0" }) {
  const clock = new ManualClock(Date.parse("2026-11-29T12:00:00Z"));
  const kube = new FakeKube(() => clock.now());
  const recorder = new MemoryRecorder();
  const brokers = new FakeBrokerClient();
  const ac = new AbortController();
  const storage = new MemoryStorageApi();
  const deps: ReconcileDeps = {
    caches: kube.caches,
    api: guardedApi(kube, ac.signal),
    storage,
    recorder,
    brokers,
    clock,
    log: pino({ level: "silent" }),
    memory: new ControllerMemory(),
    defaultBrokerImage: undefined,
  };
  kube.create(kube.clusters, {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: NS },
    spec,
  });
  // Like a kubelet: a draining broker fails its readiness probe.
  brokers.onDrainChange = (id, draining) => {
    if (kube.pods.get(NS, id) !== undefined) kube.setPodReady(NS, id, !draining);
  };
  const cluster = () => kube.clusters.get(NS, "demo")!;
  const reconcile = () => reconcileCluster(`${NS}/demo`, deps);
  /** Up to n passes, the clock advanced by stepMs before each; stops early once `going` turns false. */
  const passes = async (n: number, stepMs = 1000, going: () => boolean = () => true) => {
    for (let pass = 0; pass < n && going(); pass++) {
      await clock.advance(stepMs);
      await reconcile();
    }
  };
  /**
   * A NaradTopic of the demo cluster (the topic reconcile is the test's to
   * run); one copy per partition unless the test asks for more.
   */
  const createTopic = (name: string, partitions: number, replicationFactor = 1) =>
    kube.create(kube.topics, {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name, namespace: NS },
      spec: { cluster: "demo", partitions, replicationFactor },
    } satisfies NaradTopic);
  /** The writes of one pass alone (kube.writes cleared before it, holding them after). */
  const writesOfOnePass = async () => {
    kube.writes.length = 0;
    await reconcile();
    return [...kube.writes];
  };
  /** The first pass, three Ready pods at rev-1, a second pass: a Running cluster of demo-0..2. */
  const runningAtRev1 = async () => {
    await reconcile();
    for (const i of [0, 1, 2]) kube.addPod(NS, "demo", i, true);
    kube.setStatefulSetStatus(NS, "demo", "rev-1");
    await reconcile();
  };
  /** spec.image changed and applied (the template), and the StatefulSet reporting the new revision rev-2. */
  const rollTo = async (image: string) => {
    kube.updateSpec(kube.clusters, NS, "demo", (s) => {
      s.image = image;
    });
    await reconcile();
    kube.setStatefulSetStatus(NS, "demo", "rev-2");
  };
  /** Up to 20 one-second passes, stopping once the roll has deleted this pod. */
  const untilPodDeleted = (pod: string) => passes(20, 1000, () => kube.pods.get(NS, pod) !== undefined);
  return {
    clock,
    kube,
    recorder,
    brokers,
    deps,
    ac,
    cluster,
    reconcile,
    storage,
    passes,
    runningAtRev1,
    rollTo,
    untilPodDeleted,
    writesOfOnePass,
    createTopic,
  };
}

/**
 * A 3-broker cluster rolling to an image that crash-loops: the roll has
 * deleted demo-2 and its replacement (rev-2) is there but not Ready.
 */
async function brokenReplacement(rollout: NonNullable<NaradCluster["spec"]["rollout"]>) {
  const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0", rollout });
  await t.runningAtRev1();
  await t.rollTo("ghcr.io/narad/narad:broken");
  await t.untilPodDeleted("demo-2");
  expect(t.kube.pods.get(NS, "demo-2")).toBeUndefined();
  t.kube.addPod(NS, "demo", 2, false, "rev-2");
  return t;
}

function memberState(c: NaradCluster, id: string) {
  return c.status?.members?.find((m) => m.id === id)?.state;
}

function cond(c: NaradCluster, type: string) {
  return getCondition(c.status?.conditions, type);
}

describe("NaradCluster reconcile", () => {
  it("creates every owned object with a controller ownerReference, then reports Creating", async () => {
    const t = setup();
    const r = await t.reconcile();
    expect(t.kube.writes.filter((w) => w.startsWith("apply"))).toEqual([
      "apply ServiceAccount demo-broker",
      "apply Role demo-broker",
      "apply RoleBinding demo-broker",
      "apply ConfigMap demo-config",
      "apply Service demo-headless",
      "apply Service demo",
      "apply PodDisruptionBudget demo",
      "apply StatefulSet demo",
    ]);
    const uid = t.cluster().metadata.uid;
    const all = [...t.kube.owned.values()].flatMap((k) => k.list()).concat(t.kube.statefulSets.list());
    for (const o of all) {
      expect(o.metadata?.ownerReferences).toEqual([
        {
          apiVersion: "narad.dev/v1alpha1",
          kind: "NaradCluster",
          name: "demo",
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const sts = t.kube.statefulSets.get(NS, "demo")!;
    expect(sts.spec?.replicas).toBe(3);
    expect(sts.spec?.template.metadata?.annotations?.["narad.dev/config-hash"]).toMatch(/^[0-9a-f]{16}$/);
    const c = t.cluster();
    expect(c.status?.observedGeneration).toBe(1);
    expect(c.status?.phase).toBe("Creating");
    expect(c.status?.members?.map((m) => m.state)).toEqual(["Joining", "Joining", "Joining"]);
    expect(cond(c, "Ready")?.status).toBe("False");
    expect(cond(c, "Progressing")?.reason).toBe("CreatingPods");
    expect(r.requeueAfterMs).toBe(5000);
    // 8 owned objects + the generated cluster secret, users Secret and the (empty) API users
    // Secret the Users API keeps on the kubernetes metastore (auth on by default).
    expect(t.recorder.reasons().filter((x) => x === "Created")).toHaveLength(11);
  });

  it("becomes Ready once pods are ready, then a quiet reconcile writes nothing", async () => {
    const t = setup();
    await t.reconcile();
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, true);
    t.kube.setStatefulSetStatus(NS, "demo", "rev-1");
    t.brokers.statuses.set("demo-1", {
      nodeId: "demo-1",
      ready: true,
      draining: false,
      wal: { pendingRecords: 7, checkpoint: 1, nextSeq: 8 },
    });
    const r = await t.reconcile();
    const c = t.cluster();
    expect(c.status?.phase).toBe("Running");
    expect(c.status?.readyReplicas).toBe(3);
    expect(c.status?.members?.map((m) => [m.id, m.state, m.address])).toEqual([
      ["demo-0", "Active", "127.1.0.1:7942"],
      ["demo-1", "Active", "127.1.0.2:7942"],
      ["demo-2", "Active", "127.1.0.3:7942"],
    ]);
    expect(c.status?.members?.[1]?.walPendingRecords).toBe(7);
    expect(c.status?.membershipEpoch).toBe(2);
    expect(["Ready", "Progressing", "Degraded", "Stable"].map((x) => cond(c, x)?.status)).toEqual([
      "True",
      "False",
      "False",
      "True",
    ]);
    expect(c.status?.selector).toContain("narad.dev/cluster=demo");
    expect(r.requeueAfterMs).toBeUndefined();

    expect(await t.writesOfOnePass()).toEqual([]);
  });

  it("an image change with the rollout paused updates the template and restarts no pod", async () => {
    const t = setup();
    await t.runningAtRev1();
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.image = "ghcr.io/narad/narad:2.0";
      s.rollout = { paused: true };
    });
    expect(
      (await t.writesOfOnePass()).filter((w) => w.startsWith("apply") || w.startsWith("delete")),
    ).toEqual(["apply StatefulSet demo"]);
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.template.spec?.containers[0]?.image).toBe(
      "ghcr.io/narad/narad:2.0",
    );
    const ev = t.recorder.events.find((e) => e.reason === "TemplateUpdated");
    expect(ev?.message).toContain(
      "spec.template.spec.containers[narad].image: ghcr.io/narad/narad:1.0 → ghcr.io/narad/narad:2.0",
    );
    // the StatefulSet controller would now report a new update revision
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    for (let i = 0; i < 3; i++) await t.reconcile();
    expect(t.kube.writes.filter((w) => w.startsWith("delete"))).toEqual([]);
    expect(t.brokers.calls.filter((c) => c.startsWith("drain"))).toEqual([]);
    const c = t.cluster();
    expect(c.status?.observedGeneration).toBe(2);
    expect(c.status?.roll).toBeUndefined();
    expect(cond(c, "Progressing")?.reason).toBe("RolloutPaused");
    expect(cond(c, "Ready")?.status).toBe("True");
  });

  it("an image change rolls the pods one at a time: Maintenance, drain, delete, Ready, Active", async () => {
    const t = setup();
    await t.runningAtRev1();
    await t.rollTo("ghcr.io/narad/narad:2.0");
    const epochs: number[] = [t.cluster().status?.membershipEpoch ?? 0];
    const trace: string[] = [];
    for (let pass = 0; pass < 40; pass++) {
      await t.clock.advance(1000);
      const r = await t.reconcile();
      const c = t.cluster();
      epochs.push(c.status?.membershipEpoch ?? 0);
      // at most one pod away at any time, and only the one status.roll names
      const away = [0, 1, 2].filter((i) => {
        const p = t.kube.pods.get(NS, `demo-${i}`);
        return p === undefined || p.status?.conditions?.[0]?.status !== "True";
      });
      expect(away.length).toBeLessThanOrEqual(1);
      // the StatefulSet controller and kubelet: recreate deleted pods at the update revision, Ready a pass later
      for (const i of [0, 1, 2]) {
        const name = `demo-${i}`;
        const p = t.kube.pods.get(NS, name);
        if (p === undefined) {
          trace.push(`deleted ${name} (roll ${c.status?.roll?.podInFlight}, member ${memberState(c, name)})`);
          t.kube.addPod(NS, "demo", i, false, "rev-2");
          t.brokers.draining.delete(name); // a fresh broker process
        } else if (p.status?.conditions?.[0]?.status === "False" && !t.brokers.draining.has(name))
          t.kube.addPod(NS, "demo", i, true, "rev-2");
      }
      if (r.requeueAfterMs === undefined && c.status?.roll === undefined && pass > 3) break;
    }
    expect(trace).toEqual([
      "deleted demo-2 (roll demo-2, member Maintenance)",
      "deleted demo-1 (roll demo-1, member Maintenance)",
      "deleted demo-0 (roll demo-0, member Maintenance)",
    ]);
    expect(t.brokers.calls.filter((x) => x.startsWith("drain")).map((x) => x.split(" ")[1])).toEqual([
      "demo-2",
      "demo-1",
      "demo-0",
    ]);
    expect(t.brokers.calls.filter((x) => x.startsWith("cancelDrain"))).toEqual([]);
    const c = t.cluster();
    expect(c.status?.roll).toBeUndefined();
    expect(c.status?.members?.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
    expect(cond(c, "Progressing")?.reason).toBe("UpToDate");
    expect(c.status?.phase).toBe("Running");
    // every member change bumped the epoch: 3 × (Active → Maintenance → Active)
    expect(epochs.at(-1)! - epochs[0]!).toBeGreaterThanOrEqual(6);
    expect(t.recorder.reasons()).toEqual(
      expect.arrayContaining(["RollingUpdate", "Draining", "MemberChanged", "RollComplete"]),
    );
  });

  it("a drain that cannot finish blocks the roll with RollBlocked and deletes nothing until it drains", async () => {
    const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0", rollout: { drainTimeoutSeconds: 10 } });
    await t.runningAtRev1();
    t.brokers.stuckDrain.set("demo-2", 42);
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.passes(15);
    const c = t.cluster();
    expect(c.status?.roll?.podInFlight).toBe("demo-2");
    expect(memberState(c, "demo-2")).toBe("Maintenance");
    expect(cond(c, "Progressing")?.reason).toBe("RollBlocked");
    expect(cond(c, "Progressing")?.message).toContain("42 WAL record(s) pending");
    expect(cond(c, "Degraded")?.reason).toBe("RollBlocked");
    expect(t.kube.writes.filter((w) => w.startsWith("evict Pod"))).toEqual([]);
    expect(t.recorder.events.filter((e) => e.reason === "RollBlocked")).toHaveLength(1);

    // the drain finishes: the roll continues with that pod, and only it
    t.brokers.stuckDrain.delete("demo-2");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.kube.writes.filter((w) => w.startsWith("evict Pod"))).toEqual(["evict Pod demo-2"]);
  });

  it("force deletes a pod whose drain timed out, with a Warning", async () => {
    const t = setup({
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      rollout: { drainTimeoutSeconds: 5, force: true },
    });
    await t.runningAtRev1();
    t.brokers.stuckDrain.set("demo-2", 3);
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.passes(10);
    expect(t.kube.writes.filter((w) => w.startsWith("evict Pod"))).toEqual(["evict Pod demo-2"]);
    expect(t.recorder.events.find((e) => e.reason === "ForcedRestart")?.type).toBe("Warning");
  });

  it("a restarted operator (no memory) resumes the roll from status.roll", async () => {
    const t = setup();
    await t.runningAtRev1();
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.reconcile(); // enter Maintenance for demo-2
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-2");
    // a new operator process: fresh memory, same cluster state
    t.deps.memory = new ControllerMemory();
    await t.reconcile(); // drain
    await t.reconcile(); // delete
    expect(t.kube.writes.filter((w) => w.startsWith("evict Pod"))).toEqual(["evict Pod demo-2"]);
    t.deps.memory = new ControllerMemory();
    t.kube.addPod(NS, "demo", 2, true, "rev-2");
    t.brokers.draining.delete("demo-2"); // a fresh broker process
    await t.reconcile(); // finish
    const c = t.cluster();
    expect(c.status?.roll).toBeUndefined();
    expect(memberState(c, "demo-2")).toBe("Active");
    await t.reconcile(); // next pod
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-1");
  });

  /** Three Ready pods at rev-1, then the StatefulSet wants rev-2: demo-2 is in flight after one more pass. */
  async function rollStarted(t: ReturnType<typeof setup>) {
    await t.runningAtRev1();
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.reconcile(); // enterMaintenance demo-2
    expect(t.cluster().status?.roll).toMatchObject({ podInFlight: "demo-2", podReadyAtStart: true });
  }
  const evictions = (t: ReturnType<typeof setup>) => t.kube.writes.filter((w) => w.startsWith("evict"));

  it("#21.2: one failed status call of a draining (not Ready) broker does not delete its pod", async () => {
    const t = setup();
    await rollStarted(t);
    t.brokers.stuckDrain.set("demo-2", 7);
    await t.clock.advance(1000);
    await t.reconcile(); // drain
    t.kube.setPodReady(NS, "demo-2", false); // draining brokers report not Ready
    t.brokers.unreachable.add("demo-2"); // one status call fails (timeout, 401, stall)
    await t.clock.advance(1000);
    await t.reconcile();
    expect(evictions(t)).toEqual([]);
    expect(cond(t.cluster(), "Progressing")?.message).toContain("confirm its drain");
    t.brokers.unreachable.delete("demo-2");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(evictions(t)).toEqual([]); // still 7 pending
    t.brokers.stuckDrain.delete("demo-2");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(evictions(t)).toEqual(["evict Pod demo-2"]);
  });

  it("#21.3: no drain while another broker is down; past gateTimeoutSeconds the drain is cancelled and the roll cleared", async () => {
    const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0", rollout: { gateTimeoutSeconds: 10 } });
    await rollStarted(t);
    t.brokers.stuckDrain.set("demo-2", 7);
    await t.clock.advance(1000);
    await t.reconcile(); // drain
    expect(t.brokers.draining.has("demo-2")).toBe(true);
    t.kube.setPodReady(NS, "demo-1", false); // another broker fails mid-roll
    await t.passes(6);
    expect(t.cluster().status?.roll?.gateBlockedSince).toBeDefined();
    expect(t.brokers.calls.filter((c) => c.startsWith("cancelDrain"))).toEqual([]);
    expect(t.recorder.events.filter((e) => e.reason === "RollWaiting")).toHaveLength(1);
    await t.passes(6, 1000, () => !t.recorder.reasons().includes("RollAborted"));
    const c = t.cluster();
    expect(t.brokers.calls.filter((x) => x.startsWith("cancelDrain"))).toEqual(["cancelDrain demo-2"]);
    expect(t.brokers.draining.has("demo-2")).toBe(false);
    expect(c.status?.roll).toBeUndefined();
    expect(memberState(c, "demo-2")).toBe("Active");
    const aborted = t.recorder.events.filter((e) => e.reason === "RollAborted");
    expect(aborted).toHaveLength(1);
    expect(aborted[0]?.type).toBe("Warning");
    expect(aborted[0]?.message).toMatch(/demo-1 not Ready.*gateTimeoutSeconds 10.*drain cancelled/);
    expect(evictions(t)).toEqual([]);
    // the next restart is the failed pod itself (not Ready first), never demo-2 again meanwhile
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.cluster().status?.roll).toMatchObject({ podInFlight: "demo-1", podReadyAtStart: false });
    expect(t.brokers.calls.filter((x) => x.startsWith("drain"))).toEqual(["drain demo-2 2000"]);
  });

  it("#21.3: an abort whose drain cancel fails retries it every pass, reports it, and starts no restart until it is confirmed", async () => {
    const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0", rollout: { gateTimeoutSeconds: 3 } });
    await rollStarted(t);
    t.brokers.stuckDrain.set("demo-2", 7);
    await t.clock.advance(1000);
    await t.reconcile(); // drain
    t.kube.setPodReady(NS, "demo-1", false); // a second broker fails...
    t.brokers.unreachable.add("demo-2"); // ...and the drained one stops answering
    await t.passes(8, 1000, () => !t.recorder.reasons().includes("RollAborted"));
    expect(t.cluster().status?.roll).toBeUndefined();
    expect(t.cluster().status?.drainCancel).toMatchObject({ pod: "demo-2", attempts: 1 });
    expect(t.recorder.events.find((e) => e.reason === "RollAborted")?.message).toMatch(
      /cancelling its drain failed.*retrying/,
    );
    // Still away: retried, reported, and no other restart starts meanwhile.
    await t.passes(3);
    expect(t.brokers.calls.filter((c) => c === "cancelDrain demo-2").length).toBeGreaterThanOrEqual(3);
    expect(t.cluster().status?.drainCancel?.attempts).toBeGreaterThanOrEqual(3);
    expect(t.cluster().status?.roll).toBeUndefined();
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("DrainCancelPending");
    expect(cond(t.cluster(), "Degraded")?.message).toMatch(/demo-2 may still be draining/);
    // Back: the cancel lands, the report clears, and the roll may go on.
    t.brokers.unreachable.delete("demo-2");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.brokers.draining.has("demo-2")).toBe(false);
    expect(t.cluster().status?.drainCancel).toBeUndefined();
    expect(t.recorder.reasons()).toContain("DrainCancelled");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-1");
  });

  it("#21.3: an operator restarted with a drain cancel owed carries on from status", async () => {
    const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    await rollStarted(t);
    t.brokers.draining.add("demo-2");
    // As an earlier operator left it: the roll abandoned, the cancel owed.
    await t.kube.patchStatus(
      { plural: "naradclusters", namespace: NS, name: "demo" },
      { roll: null, drainCancel: { pod: "demo-2", since: "2026-11-29T12:00:00Z", attempts: 1 } },
      t.cluster().metadata.resourceVersion ?? "",
    );
    t.deps.memory = new ControllerMemory();
    await t.reconcile();
    expect(t.brokers.calls).toContain("cancelDrain demo-2");
    expect(t.brokers.draining.has("demo-2")).toBe(false);
    expect(t.cluster().status?.drainCancel).toBeUndefined();
  });

  it("#21.3: the abort shows in the conditions of its pass", async () => {
    const t = setup({ replicas: 3, image: "ghcr.io/narad/narad:1.0", rollout: { gateTimeoutSeconds: 2 } });
    await rollStarted(t);
    t.kube.setPodReady(NS, "demo-0", false);
    let seen: string | undefined;
    for (let pass = 0; pass < 5 && seen === undefined; pass++) {
      await t.clock.advance(1000);
      await t.reconcile();
      const p = cond(t.cluster(), "Progressing");
      if (p?.reason === "RollAborted") seen = p.message;
    }
    expect(seen).toMatch(/restart of demo-2 abandoned/);
  });

  it("#21.4: planned restarts go through the Eviction API; a PodDisruptionBudget refusal (429) is a wait that says so", async () => {
    const t = setup();
    await rollStarted(t);
    t.kube.evictionBudget = () => "Cannot evict pod as it would violate the pod's disruption budget.";
    await t.passes(4);
    expect(t.kube.pods.get(NS, "demo-2")).toBeDefined();
    expect(t.kube.writes.filter((w) => w.startsWith("delete Pod "))).toEqual([]);
    expect(cond(t.cluster(), "Progressing")?.message).toContain("PodDisruptionBudget");
    expect(t.recorder.events.filter((e) => e.reason === "EvictionRefused")).toHaveLength(1);
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-2");
    t.kube.evictionBudget = () => undefined;
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.kube.pods.get(NS, "demo-2")).toBeUndefined();
    expect(evictions(t).at(-1)).toBe("evict Pod demo-2");
  });

  it("#21.4: an Eviction that fails (not a budget refusal) fails the step: RollFailed once per try, the pod stays in flight, retried", async () => {
    const t = setup();
    await rollStarted(t);
    const evict = t.kube.evictPod.bind(t.kube);
    let failing = true;
    t.kube.evictPod = (ns, name, uid) =>
      failing ? Promise.reject(new ApiError(500, "etcdserver: request timed out")) : evict(ns, name, uid);
    let thrown: unknown;
    for (let pass = 0; pass < 6 && thrown === undefined; pass++) {
      await t.clock.advance(1000);
      await t.reconcile().catch((err: unknown) => {
        thrown = err;
      });
    }
    expect(String(thrown)).toContain("evict pod demo-2: ");
    expect(t.kube.pods.get(NS, "demo-2")).toBeDefined();
    expect(t.recorder.events.filter((e) => e.reason === "RollFailed")).toHaveLength(1);
    // The failed pass wrote the failure to status and kept the roll in flight.
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-2");
    expect(cond(t.cluster(), "Degraded")?.message).toContain("evict pod demo-2");
    failing = false;
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.kube.pods.get(NS, "demo-2")).toBeUndefined();
    expect(evictions(t).at(-1)).toBe("evict Pod demo-2");
  });

  it("#21.5: a lease lost mid-reconcile stops broker calls too: no drain after the term ended", async () => {
    const t = setup();
    await rollStarted(t);
    // the manager hands reconciles a client bound to the term's signal
    t.deps.brokers = guardedBrokerClient(t.brokers, t.ac.signal);
    t.brokers.onCall = (call) => {
      if (call === "status demo-2") t.ac.abort(); // the lease is lost while the probe is out
    };
    await t.clock.advance(1000);
    await t.reconcile().catch((err: unknown) => expect(err).toBeInstanceOf(AbortedError));
    expect(t.brokers.calls.filter((c) => !c.startsWith("status"))).toEqual([]);
    expect(t.brokers.draining.has("demo-2")).toBe(false);
  });

  it("a config change changes the config hash on the template", async () => {
    const t = setup();
    await t.reconcile();
    const before = t.kube.statefulSets.get(NS, "demo")?.spec?.template.metadata?.annotations?.[
      "narad.dev/config-hash"
    ];
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.broker = { logLevel: "debug" };
    });
    await t.reconcile();
    const after = t.kube.statefulSets.get(NS, "demo")?.spec?.template.metadata?.annotations?.[
      "narad.dev/config-hash"
    ];
    expect(after).not.toBe(before);
    expect(
      JSON.parse(
        t.kube.owned.get("ConfigMap")?.get(NS, "demo-config")?.["data" as never]?.["narad.json"] ?? "{}",
      ).logLevel,
    ).toBe("debug");
  });

  it("refuses an unsafe scale-down and a volume change with conditions and Warnings", async () => {
    // No pod is Ready: the members that would remain are not Active, so the
    // scale-down may not start (the StatefulSet keeps 3).
    const t = setup();
    await t.reconcile();
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
      s.storage = { storageClassName: "premium" };
    });
    await t.reconcile();
    const sts = t.kube.statefulSets.get(NS, "demo");
    expect(sts?.spec?.replicas).toBe(3);
    expect(sts?.spec?.volumeClaimTemplates?.[0]?.spec?.storageClassName).toBeUndefined();
    expect(t.recorder.reasons()).toEqual(expect.arrayContaining(["ScaleDownBlocked", "VolumeChangeRefused"]));
    const degraded = cond(t.cluster(), "Degraded");
    expect(degraded?.status).toBe("True");
    expect(degraded?.reason).toBe("ScaleDownBlocked");
    expect(degraded?.message).toContain(
      "scale-down to 2 refused: the remaining members must all be Active and Ready",
    );
    expect(degraded?.message).toContain("volume claim change refused");
    expect(memberState(t.cluster(), "demo-2")).toBe("Joining");
  });

  it("a failed apply shows in Degraded, emits a Warning and throws for backoff", async () => {
    const t = setup();
    t.kube.failApply = (o) =>
      o.kind === "StatefulSet" ? new ApiError(422, "StatefulSet is invalid") : undefined;
    await expect(t.reconcile()).rejects.toThrow(/apply StatefulSet demo/);
    const c = t.cluster();
    expect(cond(c, "Degraded")?.reason).toBe("ReconcileError");
    expect(cond(c, "Degraded")?.message).toContain("StatefulSet is invalid");
    expect(t.recorder.events.find((e) => e.reason === "ApplyFailed")?.type).toBe("Warning");
  });

  it("recreates an owned object deleted behind its back", async () => {
    const t = setup();
    await t.reconcile();
    t.kube.owned.get("Service")?.remove(NS, "demo");
    expect(await t.writesOfOnePass()).toContain("apply Service demo");
  });

  it("a member whose pod stays unready past the grace goes Down", async () => {
    const t = setup({ replicas: 2, rollout: { downGraceSeconds: 30 } });
    await t.reconcile();
    t.kube.addPod(NS, "demo", 0, true);
    t.kube.addPod(NS, "demo", 1, true);
    await t.reconcile();
    t.kube.pods.remove(NS, "demo-1");
    t.brokers.unreachable.add("demo-1");
    const r = await t.reconcile();
    expect(t.cluster().status?.members?.[1]?.state).toBe("Active");
    expect(r.requeueAfterMs).toBeLessThanOrEqual(5000);
    await t.clock.advance(31_000);
    await t.reconcile();
    const c = t.cluster();
    expect(c.status?.members?.[1]?.state).toBe("Down");
    expect(c.status?.phase).toBe("Degraded");
    expect(t.recorder.events.find((e) => e.reason === "MemberDown")?.message).toContain(
      "demo-1: Active → Down",
    );
  });

  it("writes nothing once leadership is lost", async () => {
    const t = setup();
    t.ac.abort();
    await expect(t.reconcile()).rejects.toBeInstanceOf(AbortedError);
    expect(t.kube.writes).toEqual([]);
  });

  it("uses the operator's default broker image when the spec names none", async () => {
    const t = setup({ replicas: 1 });
    t.deps.defaultBrokerImage = "ghcr.io/narad/narad:from-env";
    await t.reconcile();
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.template.spec?.containers[0]?.image).toBe(
      "ghcr.io/narad/narad:from-env",
    );
  });
});

describe("NaradTopic reconcile", () => {
  async function withTopic(partitions = 5) {
    const t = setup();
    await t.reconcile();
    t.createTopic("orders", partitions);
    const topic = () => t.kube.topics.get(NS, "orders")!;
    const reconcileT = () => reconcileTopic(`${NS}/orders`, t.deps);
    return { ...t, topic, reconcileT };
  }

  it("adds the finalizer and waits while no member is Active", async () => {
    const t = await withTopic();
    const r = await t.reconcileT();
    expect(t.topic().metadata.finalizers).toEqual(["narad.dev/topic-data"]);
    expect(t.topic().status?.phase).toBe("Assigning");
    expect(getCondition(t.topic().status?.conditions, "Ready")?.reason).toBe("NoActiveMembers");
    expect(r.requeueAfterMs).toBe(15_000);
  });

  it("assigns partitions over Active members, sticky on later passes", async () => {
    const t = await withTopic(5);
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, true);
    await t.reconcile();
    await t.reconcileT();
    const s = t.topic().status;
    expect(s?.phase).toBe("Ready");
    expect(s?.assignments).toHaveLength(5);
    expect(new Set(s?.assignments?.map((a) => a.owner)).size).toBe(3);
    expect(s?.assignmentEpoch).toBe(1);
    expect(getCondition(s?.conditions, "Ready")?.status).toBe("True");
    t.kube.writes.length = 0;
    await t.reconcileT();
    expect(t.kube.writes).toEqual([]);
  });

  it("reports a missing cluster", async () => {
    const t = await withTopic();
    t.kube.clusters.remove(NS, "demo");
    await t.reconcileT();
    expect(getCondition(t.topic().status?.conditions, "Ready")?.reason).toBe("ClusterNotFound");
  });

  it("deletion waits for every member, Down ones included, then removes the finalizer", async () => {
    const t = await withTopic(3);
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, true);
    await t.reconcile();
    await t.reconcileT();
    // demo-2 goes Down
    t.kube.pods.remove(NS, "demo-2");
    t.brokers.unreachable.add("demo-2");
    await t.reconcile();
    await t.clock.advance(31_000);
    await t.reconcile();
    expect(t.cluster().status?.members?.[2]?.state).toBe("Down");
    // the user deletes the topic
    const obj = t.topic();
    t.kube.topics.put({
      ...obj,
      metadata: { ...obj.metadata, deletionTimestamp: new Date(), resourceVersion: t.kube.nextRv() },
    });
    t.brokers.refuseDeletion.set("demo-1", "HTTP 409: topic still exists here");
    const r = await t.reconcileT();
    expect(r.requeueAfterMs).toBe(5000);
    expect(t.topic().metadata.finalizers).toEqual(["narad.dev/topic-data"]);
    const ready = getCondition(t.topic().status?.conditions, "Ready");
    expect(ready?.reason).toBe("DeletionPending");
    expect(ready?.message).toContain("demo-2 (Down)");
    expect(ready?.message).toContain("demo-1 (HTTP 409");
    expect(t.recorder.events.find((e) => e.reason === "DeletionWaiting")?.type).toBe("Warning");
    expect(t.brokers.deletions).toEqual(["demo-0/orders"]);

    // demo-1 now agrees; demo-2 comes back
    t.brokers.refuseDeletion.clear();
    t.brokers.unreachable.delete("demo-2");
    t.kube.addPod(NS, "demo", 2, true);
    await t.reconcile();
    await t.reconcileT();
    expect(t.kube.topics.get(NS, "orders")).toBeUndefined();
    expect(t.brokers.deletions.sort()).toEqual([
      "demo-0/orders",
      "demo-0/orders",
      "demo-1/orders",
      "demo-2/orders",
    ]);
    expect(t.recorder.reasons()).toContain("DataDeleted");
  });
});

describe("issue #21 item 10: a topic deletion behind a Down member", () => {
  it("reports Degraded=DeletionBlocked after the bound, and narad.dev/force-delete releases it", async () => {
    const t = setup();
    await t.reconcile();
    t.createTopic("orders", 3);
    const topic = () => t.kube.topics.get(NS, "orders");
    const reconcileT = () => reconcileTopic(`${NS}/orders`, t.deps);
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, true);
    await t.reconcile();
    await reconcileT();
    t.kube.pods.remove(NS, "demo-2");
    t.brokers.unreachable.add("demo-2");
    await t.reconcile();
    await t.clock.advance(31_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-2")).toBe("Down");
    const obj = topic()!;
    t.kube.topics.put({
      ...obj,
      metadata: { ...obj.metadata, deletionTimestamp: new Date(), resourceVersion: t.kube.nextRv() },
    });
    await reconcileT();
    expect(getCondition(topic()?.status?.conditions, "Degraded")?.status).not.toBe("True");
    await t.clock.advance(10 * 60_000);
    await reconcileT();
    const degraded = getCondition(topic()?.status?.conditions, "Degraded");
    expect(degraded?.status).toBe("True");
    expect(degraded?.reason).toBe("DeletionBlocked");
    expect(degraded?.message).toContain("demo-2 (Down)");
    expect(degraded?.message).toContain("narad.dev/force-delete=true");
    expect(topic()?.metadata.finalizers).toEqual(["narad.dev/topic-data"]);
    const blocked = topic()!;
    t.kube.topics.put({
      ...blocked,
      metadata: {
        ...blocked.metadata,
        annotations: { "narad.dev/force-delete": "true" },
        resourceVersion: t.kube.nextRv(),
      },
    });
    await reconcileT();
    expect(topic()?.metadata.finalizers ?? []).toEqual([]);
    expect(t.recorder.events.find((e) => e.reason === "ForcedDeletion")?.message).toContain("demo-2");
  });
});

describe("ServiceMonitor", () => {
  it("is applied once when enabled, a failure is a Warning (not a failed reconcile), and it is deleted when disabled", async () => {
    const t = setup({ replicas: 1, metrics: { serviceMonitor: { enabled: true, interval: "15s" } } });
    t.kube.failApply = (o) =>
      o.kind === "ServiceMonitor"
        ? new ApiError(404, "the server could not find the requested resource")
        : undefined;
    await t.reconcile();
    expect(t.recorder.events.find((e) => e.reason === "ServiceMonitorFailed")?.type).toBe("Warning");
    const monitors = () => [...t.kube.other.keys()].filter((k) => k.startsWith("ServiceMonitor/"));
    expect(monitors()).toEqual([]);
    t.kube.failApply = () => undefined;
    await t.reconcile();
    expect(monitors()).toEqual(["ServiceMonitor/ns1/demo"]);
    expect((await t.writesOfOnePass()).filter((w) => w.includes("ServiceMonitor"))).toEqual([]);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.metrics = { serviceMonitor: { enabled: false } };
    });
    await t.reconcile();
    expect(monitors()).toEqual([]);
    expect((await t.writesOfOnePass()).filter((w) => w.includes("ServiceMonitor"))).toEqual([]);
  });
});

describe("PodMonitor", () => {
  it("is applied when enabled, beside or instead of the ServiceMonitor, and deleted when disabled", async () => {
    const t = setup({ replicas: 1, metrics: { podMonitor: { enabled: true } } });
    await t.reconcile();
    const monitors = () => [...t.kube.other.keys()].filter((k) => k.includes("Monitor/")).sort();
    expect(monitors()).toEqual(["PodMonitor/ns1/demo"]);
    expect((await t.writesOfOnePass()).filter((w) => w.includes("PodMonitor"))).toEqual([]);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.metrics = { podMonitor: { enabled: false } };
    });
    await t.reconcile();
    expect(monitors()).toEqual([]);
  });
});

describe("Scaling", () => {
  /** 3 Ready brokers and a topic of 6 partitions assigned over them. */
  async function scaled(spec: NaradCluster["spec"] = { replicas: 3, image: "ghcr.io/narad/narad:1.0" }) {
    const t = setup(spec);
    await t.reconcile();
    for (let i = 0; i < 3; i++) t.kube.addPod(NS, "demo", i, true);
    await t.reconcile();
    t.createTopic("orders", 6);
    await reconcileTopic(`${NS}/orders`, t.deps);
    await reconcileTopic(`${NS}/orders`, t.deps);
    const owners = () => (t.kube.topics.get(NS, "orders")?.status?.assignments ?? []).map((a) => a.owner);
    /** One pass, then what the fake destinations and the StatefulSet controller would do. */
    const pass = async () => {
      await t.reconcile();
      // The brokers' views follow the member states the operator wrote.
      t.brokers.decommissioning.clear();
      for (const m of t.cluster().status?.members ?? [])
        if (m.state === "Decommissioning") t.brokers.decommissioning.add(m.id);
      for (const [key, m] of t.brokers.moves) {
        const [dest, , partition] = key.split("/");
        // A destination that does not answer makes no progress either (SIGSTOP).
        if (t.brokers.unreachable.has(dest ?? "")) continue;
        if (owners()[Number(partition)] === dest && m.state === "ready") m.state = "done";
        else if (m.state === "copying") m.state = "ready";
      }
      const sts = t.kube.statefulSets.get(NS, "demo")?.spec?.replicas ?? 0;
      for (const p of t.kube.pods.list(NS)) {
        const ord = Number(p.metadata?.name?.split("-")[1]);
        if (ord >= sts) t.kube.pods.remove(NS, p.metadata?.name ?? "");
      }
      for (let i = 0; i < sts; i++)
        if (t.kube.pods.get(NS, `demo-${i}`) === undefined) t.kube.addPod(NS, "demo", i, true);
    };
    return { ...t, owners, pass };
  }

  it("3 → 2: decommissions demo-2 (moves via the destinations, owner swaps), then shrinks the StatefulSet", async () => {
    const t = await scaled();
    expect(new Set(t.owners())).toEqual(new Set(["demo-0", "demo-1", "demo-2"]));
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.pass();
    expect(memberState(t.cluster(), "demo-2")).toBe("Decommissioning");
    expect(t.cluster().status?.scale?.decommissioning).toBe("demo-2");
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(3);
    expect(cond(t.cluster(), "Progressing")?.reason).toBe("ScalingDown");
    for (let i = 0; i < 30 && t.kube.statefulSets.get(NS, "demo")?.spec?.replicas !== 2; i++) await t.pass();
    for (let i = 0; i < 3; i++) await t.pass();
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(2);
    expect(new Set(t.owners())).toEqual(new Set(["demo-0", "demo-1"]));
    expect(t.cluster().status?.members?.map((m) => m.id)).toEqual(["demo-0", "demo-1"]);
    expect(t.cluster().status?.scale).toBeUndefined();
    expect(t.brokers.calls.filter((c) => c.startsWith("startMove")).length).toBe(2);
    expect(t.recorder.reasons()).toEqual(
      expect.arrayContaining([
        "Decommissioning",
        "MovePlanned",
        "OwnerSwapped",
        "PartitionMoved",
        "MemberRemoved",
      ]),
    );
    expect(t.cluster().status?.phase).toBe("Running");
  });

  it("scaling back up mid-decommission cancels the moves in flight and re-admits the member", async () => {
    const t = await scaled();
    t.brokers.moveStartState = "copying";
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.reconcile(); // Decommissioning
    await t.reconcile(); // moves planned
    await t.reconcile(); // moves started (copying)
    expect(t.brokers.calls.filter((c) => c.startsWith("startMove")).length).toBe(2);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 3;
    });
    await t.reconcile();
    await t.reconcile();
    expect(t.brokers.calls.filter((c) => c.startsWith("cancelMove")).length).toBe(2);
    expect([...t.brokers.moves.values()].every((m) => m.state === "cancelled")).toBe(true);
    expect(memberState(t.cluster(), "demo-2")).toBe("Active");
    expect(t.cluster().status?.scale).toBeUndefined();
    expect(t.recorder.reasons()).toContain("DecommissionCancelled");
  });

  it("a move whose destination stops answering is aborted past spec.moves.stallTimeoutSeconds, cancelled until confirmed, and retried elsewhere after a backoff", async () => {
    const t = await scaled({
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      moves: { stallTimeoutSeconds: 10, retryBackoffSeconds: 5 },
    });
    const metrics = new OperatorMetrics();
    t.deps.metrics = metrics;
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.pass(); // Decommissioning
    await t.pass(); // moves planned
    await t.reconcile(); // started: copying on the destinations
    const stalled = t.cluster().status?.scale?.moves?.find((m) => m.to === "demo-1");
    const key = `${stalled?.topic}/${stalled?.partition}`;
    expect(t.brokers.moves.get(`demo-1/${key}`)?.state).toBe("copying");
    t.brokers.unreachable.add("demo-1"); // the destination is stopped mid-copy
    for (let i = 0; i < 3; i++) await t.pass();
    expect(t.recorder.reasons()).not.toContain("MoveAborted");
    await t.clock.advance(11_000);
    await t.pass();
    // Aborted: the owner was confirmed live, the cancel tried (and failed: it is away).
    expect(t.kube.topicReads).toContain("orders");
    expect(t.brokers.calls.filter((c) => c === `cancelMove demo-1 ${key}`)).toHaveLength(1);
    expect(t.recorder.reasons()).toEqual(expect.arrayContaining(["MoveAborted", "MoveCancelFailed"]));
    const degraded = cond(t.cluster(), "Degraded");
    expect(degraded?.reason).toBe("MoveStuck");
    expect(degraded?.message).toContain(`move of ${key} from demo-2 to demo-1 aborted`);
    expect(
      (await metrics.registry.getSingleMetricAsString("narad_operator_move_aborts_total")).trim(),
    ).toMatch(/cause="unreachable"} 1$/m);
    // Still away: the cancel is repeated, never more than one Event for it.
    await t.pass();
    await t.pass();
    expect(t.brokers.calls.filter((c) => c === `cancelMove demo-1 ${key}`).length).toBeGreaterThanOrEqual(3);
    expect(t.recorder.events.filter((e) => e.reason === "MoveCancelFailed")).toHaveLength(1);
    expect(
      t.cluster().status?.scale?.moves?.find((m) => m.to === "demo-1")?.aborting?.attempts,
    ).toBeGreaterThan(1);
    // It comes back still copying (it resumed the move): cancelled now, confirmed next pass.
    t.brokers.unreachable.delete("demo-1");
    await t.pass();
    expect(t.brokers.moves.get(`demo-1/${key}`)?.state).toBe("cancelled");
    await t.pass();
    const retry = t.cluster().status?.scale?.moveRetries?.[0];
    expect(retry).toMatchObject({ attempts: 1, avoid: "demo-1" });
    expect(t.recorder.reasons()).toContain("MoveCancelled");
    // The backoff runs, then the partition goes to the other member.
    await t.clock.advance(6_000);
    for (let i = 0; i < 30 && t.kube.statefulSets.get(NS, "demo")?.spec?.replicas !== 2; i++) await t.pass();
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(2);
    expect(t.brokers.calls).toContain(`startMove demo-0 ${key} from demo-2`);
    for (let i = 0; i < 3; i++) await t.pass();
    expect(new Set(t.owners())).toEqual(new Set(["demo-0", "demo-1"]));
    expect(cond(t.cluster(), "Degraded")?.status).toBe("False");
    expect(t.cluster().status?.scale).toBeUndefined();
  });

  it("a stale cache never aborts a move the API server shows swapped", async () => {
    const t = await scaled({
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      moves: { stallTimeoutSeconds: 10, retryBackoffSeconds: 5 },
    });
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.pass();
    await t.pass();
    await t.pass();
    const m = t.cluster().status?.scale?.moves?.[0];
    t.brokers.unreachable.add(m?.to ?? "");
    // The API server has the swap; our cache does not (yet).
    t.kube.liveTopic = (ns, name) => {
      const topic = structuredClone(t.kube.topics.get(ns, name));
      const a = topic?.status?.assignments?.find((x) => x.partition === m?.partition);
      if (a !== undefined) a.owner = m?.to ?? "";
      return topic;
    };
    await t.clock.advance(11_000);
    await t.pass();
    await t.pass();
    expect(t.kube.topicReads).toContain("orders");
    expect(t.brokers.calls.filter((c) => c.startsWith(`cancelMove ${m?.to}`))).toEqual([]);
    expect(t.recorder.reasons()).not.toContain("MoveAborted");
  });

  it("refuses a scale-down while a remaining member is Down: StatefulSet and members unchanged", async () => {
    const t = await scaled({
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      rollout: { downGraceSeconds: 1 },
    });
    t.kube.pods.remove(NS, "demo-1");
    t.brokers.unreachable.add("demo-1");
    await t.reconcile();
    await t.clock.advance(2_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-1")).toBe("Down");
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.reconcile();
    await t.reconcile();
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(3);
    expect(memberState(t.cluster(), "demo-2")).toBe("Active");
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ScaleDownBlocked");
    expect(cond(t.cluster(), "Degraded")?.message).toContain("demo-1 is Down");
    expect(t.recorder.events.filter((e) => e.reason === "ScaleDownBlocked").length).toBe(1);
  });
});

describe("issue #21: never declare Down falsely, never stall silently", () => {
  async function running(spec: NaradCluster["spec"]) {
    const t = setup(spec);
    await t.runningAtRev1();
    expect(t.cluster().status?.members?.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
    return t;
  }
  /** What the node lifecycle controller writes for missed heartbeats: Ready=False only. */
  function nodeControllerFlip(t: ReturnType<typeof setup>, name: string) {
    const p = t.kube.pods.get(NS, name)!;
    t.kube.pods.put({
      ...p,
      status: {
        ...p.status,
        conditions: [
          { type: "Ready", status: "False", lastTransitionTime: new Date(t.clock.now()) },
          { type: "ContainersReady", status: "True" },
        ],
      },
    });
  }
  const downs = (t: ReturnType<typeof setup>) => t.recorder.events.filter((e) => e.reason === "MemberDown");

  it("item 0: an API outage, every pod flipped not ready by the node controller, brokers answering: nobody Down", async () => {
    const t = await running({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    // The outage: the watch fails; when it comes back the node controller has flipped every pod.
    t.kube.pods.health = [{ name: "pods", healthy: false, recoveredAtMs: undefined }];
    await t.passes(24, 5_000);
    for (const i of [0, 1, 2]) nodeControllerFlip(t, `demo-${i}`);
    t.kube.pods.health = [{ name: "pods", healthy: true, recoveredAtMs: t.clock.now() }];
    for (let s = 0; s < 180; s += 5) {
      await t.clock.advance(5_000);
      await t.reconcile();
      expect(t.cluster().status?.members?.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
    }
    expect(downs(t)).toEqual([]);
  });

  it("item 0: pods not ready by the kubelet's word but brokers answering their admin status: nobody Down", async () => {
    const t = await running({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, false);
    await t.passes(24, 5_000);
    expect(t.cluster().status?.members?.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
    expect(downs(t)).toEqual([]);
    // The broker stops answering: Down one grace later, not before.
    t.brokers.unreachable.add("demo-1");
    await t.clock.advance(5_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-1")).toBe("Active");
    await t.passes(6, 5_000);
    expect(memberState(t.cluster(), "demo-1")).toBe("Down");
    expect(downs(t)).toHaveLength(1);
  });

  it("item 7: after a leadership gap the Down clock restarts (no Down on the first pass of the new term)", async () => {
    const t = await running({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    t.kube.pods.remove(NS, "demo-1");
    t.brokers.unreachable.add("demo-1");
    await t.reconcile();
    await t.clock.advance(20_000);
    await t.reconcile();
    // Lease lost for a minute, then regained (Manager.startLeading → memory.startTerm()).
    await t.clock.advance(60_000);
    (t.deps.memory as { startTerm?: () => void }).startTerm?.();
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-1")).toBe("Active");
    await t.clock.advance(31_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-1")).toBe("Down");
  });

  it("item 8: a pod whose kubelet clock runs 10 minutes ahead gets the full grace", async () => {
    const t = await running({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    const p = t.kube.pods.get(NS, "demo-2")!;
    t.kube.pods.put({
      ...p,
      status: {
        ...p.status,
        conditions: [
          {
            type: "Ready",
            status: "False",
            reason: "ContainersNotReady",
            lastTransitionTime: new Date(t.clock.now() - 600_000),
          },
        ],
      },
    });
    t.brokers.unreachable.add("demo-2");
    await t.reconcile();
    await t.clock.advance(10_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-2")).toBe("Active");
  });

  it("item 8: a cache whose watch fails carries no Down decision; after recovery it settles first", async () => {
    const t = await running({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
    t.kube.pods.remove(NS, "demo-0");
    t.brokers.unreachable.add("demo-0");
    t.kube.pods.health = [{ name: "pods", healthy: false, recoveredAtMs: undefined }];
    await t.passes(18, 5_000);
    expect(memberState(t.cluster(), "demo-0")).toBe("Active");
    t.kube.pods.health = [{ name: "pods", healthy: true, recoveredAtMs: t.clock.now() }];
    await t.clock.advance(50_000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-0")).toBe("Active");
    // settled (60 s) and then a full grace (30 s) of trusted observations
    await t.passes(9, 5_000);
    expect(memberState(t.cluster(), "demo-0")).toBe("Down");
  });
});

describe("issue #21 item 9: a replacement that never becomes Ready", () => {
  it("makes the cluster Degraded naming the pod and its container state, warns once, and hands the member to the Down rules", async () => {
    const t = await brokenReplacement({ downGraceSeconds: 10, replacementTimeoutSeconds: 20 });
    const p = t.kube.pods.get(NS, "demo-2")!;
    t.kube.pods.put({
      ...p,
      status: {
        ...p.status,
        conditions: [
          { type: "Ready", status: "False", reason: "ContainersNotReady" },
          { type: "ContainersReady", status: "False", reason: "ContainersNotReady" },
        ],
        containerStatuses: [
          {
            name: "narad",
            image: "ghcr.io/narad/narad:broken",
            imageID: "",
            ready: false,
            restartCount: 4,
            state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
            lastState: { terminated: { exitCode: 1, reason: "Error" } },
          },
        ],
      },
    });
    t.brokers.unreachable.add("demo-2");
    t.brokers.draining.delete("demo-2");
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-2")).toBe("Maintenance");
    expect(cond(t.cluster(), "Degraded")?.status).toBe("False");
    for (let s = 0; s < 20; s++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    const c = t.cluster();
    const degraded = cond(c, "Degraded");
    expect(degraded?.status).toBe("True");
    expect(degraded?.reason).toBe("ReplacementNotReady");
    expect(degraded?.message).toContain("demo-2");
    expect(degraded?.message).toContain("CrashLoopBackOff");
    expect(degraded?.message).toContain("last exit 1");
    expect(cond(c, "Progressing")?.status).toBe("False");
    expect(cond(c, "Ready")?.status).toBe("False");
    // Released from Maintenance: the Down rules apply (pod not ready, broker unreachable, 10 s grace).
    for (let s = 0; s < 12; s++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    expect(memberState(t.cluster(), "demo-2")).toBe("Down");
    expect(t.recorder.events.filter((e) => e.reason === "ReplacementNotReady")).toHaveLength(1);
    expect(t.recorder.events.find((e) => e.reason === "ReplacementNotReady")?.type).toBe("Warning");
  });

  it("with releaseStuckReplacement false the member stays in Maintenance, still Degraded", async () => {
    const t = await brokenReplacement({
      downGraceSeconds: 10,
      replacementTimeoutSeconds: 20,
      releaseStuckReplacement: false,
    });
    t.brokers.unreachable.add("demo-2");
    for (let s = 0; s < 40; s++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    expect(memberState(t.cluster(), "demo-2")).toBe("Maintenance");
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ReplacementNotReady");
  });
});

describe("issue #21 items 11 and 12: drift and needless writes", () => {
  it("item 11: a cluster without spec.image follows the operator's brokerImage, across an operator upgrade", async () => {
    const t = setup({ replicas: 1 });
    t.deps.defaultBrokerImage = "registry.local/narad:0.1.0";
    await t.reconcile();
    const image = () => t.kube.statefulSets.get(NS, "demo")?.spec?.template.spec?.containers[0]?.image;
    expect(image()).toBe("registry.local/narad:0.1.0");
    t.deps.defaultBrokerImage = "registry.local/narad:0.2.0"; // the operator upgraded, with a new default
    await t.reconcile();
    expect(image()).toBe("registry.local/narad:0.2.0");
    expect(t.recorder.events.some((e) => e.reason === "TemplateUpdated" && e.message.includes("0.2.0"))).toBe(
      true,
    );
    // spec.image, when set, wins
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.image = "ghcr.io/narad/narad:pinned";
    });
    await t.reconcile();
    expect(image()).toBe("ghcr.io/narad/narad:pinned");
  });

  it("item 12: quantities the API server normalised cause no apply and no Updated Event", async () => {
    const t = setup({ replicas: 1, image: "ghcr.io/narad/narad:1.0", resources: { limits: { cpu: "0.5" } } });
    await t.reconcile();
    const sts = t.kube.statefulSets.get(NS, "demo")!;
    const c0 = sts.spec!.template.spec!.containers[0]!;
    c0.resources = { ...c0.resources, limits: { ...c0.resources?.limits, cpu: "500m" } };
    t.kube.statefulSets.put(sts);
    t.kube.writes.length = 0;
    const updatedBefore = t.recorder.events.filter((e) => e.reason === "Updated").length;
    await t.reconcile();
    expect(t.kube.writes.filter((w) => w.startsWith("apply StatefulSet"))).toEqual([]);
    expect(t.recorder.events.filter((e) => e.reason === "Updated").length).toBe(updatedBefore);
  });

  it("item 12: a changing WAL backlog alone writes no status; crossing zero does", async () => {
    const t = setup();
    await t.reconcile();
    for (const i of [0, 1, 2]) t.kube.addPod(NS, "demo", i, true);
    t.kube.setStatefulSetStatus(NS, "demo", "rev-1");
    const wal = (n: number) =>
      t.brokers.statuses.set("demo-1", {
        nodeId: "demo-1",
        ready: true,
        draining: false,
        wal: { pendingRecords: n, checkpoint: 1, nextSeq: 8 },
      });
    wal(7);
    await t.reconcile();
    const statusWrites = () => t.kube.writes.filter((w) => w.startsWith("status naradclusters")).length;
    const before = statusWrites();
    for (const n of [9, 12, 3, 40]) {
      wal(n);
      await t.reconcile();
    }
    expect(statusWrites()).toBe(before);
    wal(0);
    await t.reconcile();
    expect(statusWrites()).toBe(before + 1);
    expect(t.cluster().status?.members?.[1]?.walPendingRecords).toBe(0);
  });

  it("item 12: observedGeneration does not advance when a step failed", async () => {
    const t = setup({ replicas: 1, image: "ghcr.io/narad/narad:1.0" });
    await t.reconcile();
    expect(t.cluster().status?.observedGeneration).toBe(1);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.image = "ghcr.io/narad/narad:2.0";
    });
    t.kube.failApply = (o) => (o.kind === "StatefulSet" ? new ApiError(500, "etcd timeout") : undefined);
    await expect(t.reconcile()).rejects.toThrow();
    expect(t.cluster().metadata.generation).toBe(2);
    expect(t.cluster().status?.observedGeneration).toBe(1);
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ReconcileError");
    t.kube.failApply = () => undefined;
    await t.reconcile();
    expect(t.cluster().status?.observedGeneration).toBe(2);
  });
});

describe("review-op: a stuck replacement across a new term and a fixed image", () => {
  async function stuck() {
    const t = await brokenReplacement({ downGraceSeconds: 10, replacementTimeoutSeconds: 20 });
    t.brokers.unreachable.add("demo-2");
    t.brokers.draining.delete("demo-2");
    for (let s = 0; s < 40; s++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ReplacementNotReady");
    expect(memberState(t.cluster(), "demo-2")).toBe("Down");
    return t;
  }

  it("a new leadership term does not put the released (Down) member back in Maintenance", async () => {
    const t = await stuck();
    t.deps.memory.startTerm();
    await t.clock.advance(1000);
    await t.reconcile();
    expect(memberState(t.cluster(), "demo-2")).toBe("Down");
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ReplacementNotReady");
  });

  it("once the image is fixed, the crash-looping replacement (now outdated) is restarted without waiting for a drain", async () => {
    const t = await stuck();
    const before = t.kube.writes.length;
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.image = "ghcr.io/narad/narad:1.1";
    });
    await t.reconcile();
    t.kube.setStatefulSetStatus(NS, "demo", "rev-3");
    await t.passes(120, 1000, () => t.kube.pods.get(NS, "demo-2") !== undefined);
    expect(t.kube.writes.slice(before)).toContain("evict Pod demo-2");
    expect(cond(t.cluster(), "Progressing")?.reason).not.toBe("RollBlocked");
  });
});

describe("review-op: an evicted pod that stays Terminating (its node is gone)", () => {
  it("is a stuck replacement too: Degraded, and its member leaves Maintenance", async () => {
    const t = setup({
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      rollout: { downGraceSeconds: 10, replacementTimeoutSeconds: 20, drainTimeoutSeconds: 30 },
    });
    await t.runningAtRev1();
    await t.rollTo("ghcr.io/narad/narad:1.1");
    // The eviction is accepted but the kubelet never confirms: the pod stays Terminating.
    const evict = t.kube.evictPod.bind(t.kube);
    t.kube.evictPod = async (ns, name, uid) => {
      const p = t.kube.pods.get(ns, name)!;
      const r = await evict(ns, name, uid);
      if (r.kind === "evicted")
        t.kube.pods.put({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date(t.clock.now()) } });
      return r;
    };
    await t.passes(20, 1000, () => !t.kube.writes.includes("evict Pod demo-2"));
    expect(t.kube.writes).toContain("evict Pod demo-2");
    t.brokers.unreachable.add("demo-2");
    for (let s = 0; s < 150; s++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    expect(t.kube.pods.get(NS, "demo-2")?.metadata?.deletionTimestamp).toBeDefined();
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("ReplacementNotReady");
    expect(memberState(t.cluster(), "demo-2")).toBe("Down");
  });
});
