// Leadership of replicated partitions through the controllers, against the
// fake API server and fake brokers: the handoff before a planned restart
// (the topic reconcile moves it, the roll waits for it and records it), the
// preferred-leader balance, elections around a held member whose broker
// failed (failedSince), and fan-out children placed away from their parent.

import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type {
  NaradCluster,
  NaradTopic,
  NaradTopicSpec,
  PartitionAssignment,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { FakeBrokerClient } from "../broker-client/fake.ts";
import { guardedApi } from "../kube/api.ts";
import { MemoryRecorder } from "../kube/events.ts";
import { ManualClock } from "../kube/manual-clock.ts";
import { MemoryStorageApi } from "../kube/storage-api.ts";
import { assignPartitions } from "../plan/assignment.ts";
import { planReplicatedTopic } from "../plan/topic-replication.ts";
import { reconcileCluster } from "./cluster/reconcile.ts";
import { ControllerMemory, type ReconcileDeps } from "./deps.ts";
import { FakeKube } from "./fake-kube.ts";
import { reconcileTopic } from "./topic/reconcile.ts";

const NS = "ns1";
const GRACE_S = 10;

async function setup(brokers = 3) {
  const clock = new ManualClock(Date.parse("2026-12-04T12:00:00Z"));
  const kube = new FakeKube(() => clock.now());
  const recorder = new MemoryRecorder();
  const fake = new FakeBrokerClient();
  const deps: ReconcileDeps = {
    caches: kube.caches,
    api: guardedApi(kube, new AbortController().signal),
    storage: new MemoryStorageApi(),
    recorder,
    brokers: fake,
    clock,
    log: pino({ level: "silent" }),
    memory: new ControllerMemory(),
    defaultBrokerImage: undefined,
  };
  kube.create(kube.clusters, {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: NS },
    spec: { replicas: brokers, image: "ghcr.io/narad/narad:1.0", rollout: { downGraceSeconds: GRACE_S } },
  });
  for (let i = 0; i < brokers; i++)
    fake.volumes.set(`demo-${i}`, { state: "own", uuid: `vol-${i}`, memberId: `demo-${i}` });
  // Like a kubelet: a draining broker fails its readiness probe.
  fake.onDrainChange = (id, draining) => {
    if (kube.pods.get(NS, id) !== undefined) kube.setPodReady(NS, id, !draining);
  };
  const cluster = () => kube.clusters.get(NS, "demo") as NaradCluster;
  const reconcile = () => reconcileCluster(`${NS}/demo`, deps);
  await reconcile();
  for (let i = 0; i < brokers; i++) kube.addPod(NS, "demo", i, true);
  kube.setStatefulSetStatus(NS, "demo", "rev-1");
  await reconcile();
  const createTopic = (spec: Partial<NaradTopicSpec> = {}, name = "orders") =>
    kube.create(kube.topics, {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name, namespace: NS },
      spec: { cluster: "demo", partitions: 3, ...spec },
    } satisfies NaradTopic);
  const topic = (name = "orders") => kube.topics.get(NS, name) as NaradTopic;
  const records = (name = "orders") => topic(name).status?.assignments ?? [];
  const reconcileT = (name = "orders") => reconcileTopic(`${NS}/${name}`, deps);
  /** A broker's write of the topic's records (an ISR change), by CAS. */
  const brokerWrite = (assignments: PartitionAssignment[], name = "orders") =>
    kube.patchStatus(
      { plural: "naradtopics", namespace: NS, name },
      { assignments },
      topic(name).metadata.resourceVersion ?? "",
    );
  const member = (id: string) => cluster().status?.members?.find((m) => m.id === id);
  return {
    clock,
    kube,
    recorder,
    fake,
    cluster,
    reconcile,
    createTopic,
    topic,
    records,
    reconcileT,
    brokerWrite,
    member,
  };
}

/** The members asked to drain, in order. */
const drains = (t: { fake: FakeBrokerClient }) =>
  t.fake.calls.filter((c) => c.startsWith("drain ")).map((c) => c.split(" ").slice(0, 2).join(" "));
const byPartition = (records: readonly PartitionAssignment[], p: number) =>
  records.find((a) => a.partition === p);

describe("leadership handoff before a planned restart", () => {
  it("the roll waits for the topic reconcile to move leadership off the pod, then drains it; the handoff is recorded", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    const led = t.records().filter((a) => a.leader === "demo-2");
    expect(led).toHaveLength(1);
    const p = led[0]?.partition as number;
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.clock.advance(1000);
    await t.reconcile(); // enterMaintenance
    expect(t.cluster().status?.roll?.podInFlight).toBe("demo-2");
    expect(t.member("demo-2")?.state).toBe("Maintenance");
    // The topic reconcile has not run yet: the roll waits, nothing drained.
    await t.clock.advance(1000);
    await t.reconcile();
    expect(drains(t)).toEqual([]);
    expect(t.cluster().status?.roll?.handoffDoneAt).toBeUndefined();
    // The member change reconciles the topic: leadership moves (epoch + 1, ISR unchanged).
    await t.reconcileT();
    const a = byPartition(t.records(), p);
    expect(a).toMatchObject({ leader: "demo-0", owner: "demo-0", leaderEpoch: 1 });
    expect(a?.isr).toEqual(led[0]?.isr);
    expect(t.recorder.events.filter((e) => e.reason === "LeaderElected").map((e) => e.message)).toEqual([
      `partition ${p}: leader demo-2 → demo-0, leader epoch 1 (leader demo-2 is in Maintenance (planned restart); demo-0 (Active, in sync) leads meanwhile)`,
    ]);
    await t.clock.advance(1000);
    await t.reconcile();
    expect(drains(t)).toEqual(["drain demo-2"]);
    expect(t.cluster().status?.roll).toMatchObject({
      podInFlight: "demo-2",
      handoffDoneAt: new Date(t.clock.now()).toISOString(),
    });
    expect(t.cluster().status?.roll?.leadersKept).toBeUndefined();
    expect(t.recorder.events.filter((e) => e.reason === "LeadershipHandedOff").map((e) => e.message)).toEqual(
      ["demo-2 leads no replicated partition (handoff done in 2000 ms); draining it"],
    );
    // While the roll runs, leadership does not go back to demo-2 (balance waits, and it is not Active).
    await t.clock.advance(20_000);
    await t.reconcileT();
    expect(byPartition(t.records(), p)?.leader).toBe("demo-0");
  });

  it("a partition no other in-sync replica can lead stays led by it: the roll goes on, with a Warning", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3, minInsyncReplicas: 1 });
    await t.reconcileT();
    const p = t.records().find((a) => a.leader === "demo-2")?.partition as number;
    // The leader shrank the ISR to itself (its followers lagged).
    await t.brokerWrite(
      t
        .records()
        .map((a) => (a.partition === p ? { ...a, isr: [{ member: "demo-2", volumeId: "vol-2" }] } : a)),
    );
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.clock.advance(1000);
    await t.reconcile();
    await t.reconcileT();
    expect(byPartition(t.records(), p)?.leader).toBe("demo-2");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(drains(t)).toEqual(["drain demo-2"]);
    expect(t.cluster().status?.roll?.leadersKept).toEqual([`orders/${p}`]);
    const warn = t.recorder.events.filter((e) => e.reason === "LeadershipKept");
    expect(warn.map((e) => [e.type, e.message])).toEqual([
      [
        "Warning",
        `demo-2 still leads 1 replicated partition(s) (orders/${p}): no other in-sync replica is Active on its recorded volume; they stay led by it and are unavailable while it restarts`,
      ],
    ]);
  });

  it("a restarted operator resumes the wait from status.roll; past the bound the drain goes on anyway", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    t.kube.setStatefulSetStatus(NS, "demo", "rev-2");
    await t.clock.advance(1000);
    await t.reconcile();
    // No topic reconcile ever runs (its worker is stuck): the roll waits 30 s, then drains.
    for (let i = 0; i < 28; i++) {
      await t.clock.advance(1000);
      await t.reconcile();
    }
    expect(drains(t)).toEqual([]);
    await t.clock.advance(2000);
    await t.reconcile();
    expect(drains(t)).toEqual(["drain demo-2"]);
    expect(t.recorder.events.find((e) => e.reason === "LeadershipKept")?.message).toContain(
      "leadership did not move within 30s",
    );
  });
});

describe("preferred-leader balance", () => {
  /** Leadership of every partition on its second replica (after failovers), written by CAS. */
  const pileUp = (records: readonly PartitionAssignment[]) =>
    records.map((a) => ({
      ...a,
      leader: a.replicas?.[1] as string,
      owner: a.replicas?.[1] as string,
      leaderEpoch: (a.leaderEpoch ?? 0) + 1,
    }));

  it("moves leadership back to each partition's first replica once it is settled, epoch + 1, ISR unchanged", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    const placed = t.records();
    await t.brokerWrite(pileUp(placed));
    // First seen able to lead now: it waits the settle time and asks to come back.
    const early = await t.reconcileT();
    expect(t.records().map((a) => a.leader)).toEqual(placed.map((a) => a.replicas?.[1]));
    expect(early.requeueAfterMs).toBeGreaterThan(0);
    await t.clock.advance(10_000);
    await t.reconcileT();
    for (const a of t.records()) {
      const before = byPartition(placed, a.partition);
      expect(a.leader).toBe(a.replicas?.[0]);
      expect(a.leaderEpoch).toBe(2);
      expect(a.isr).toEqual(before?.isr);
    }
    expect(t.recorder.events.filter((e) => e.reason === "LeaderElected").map((e) => e.message)).toContain(
      `partition 0: leader ${placed[0]?.replicas?.[1]} → ${placed[0]?.replicas?.[0]}, leader epoch 2 (${placed[0]?.replicas?.[0]} is the preferred leader (first replica), Active and in sync again)`,
    );
  });

  it("waits while a roll is in flight or a member is being decommissioned", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    await t.brokerWrite(pileUp(t.records()));
    await t.clock.advance(30_000);
    const piled = t.records().map((a) => a.leader);
    for (const status of [
      { roll: { podInFlight: "demo-1", startedAt: new Date(t.clock.now()).toISOString(), reason: "test" } },
      { scale: { decommissioning: "demo-2" } },
    ]) {
      t.kube.clusters.put({ ...t.cluster(), status: { ...t.cluster().status, ...status } });
      await t.reconcileT();
      expect(t.records().map((a) => a.leader)).toEqual(piled);
      t.kube.clusters.put({
        ...t.cluster(),
        status: { ...t.cluster().status, roll: undefined, scale: undefined },
      });
    }
    // The settle time counts from the first pass allowed to move.
    await t.reconcileT();
    expect(t.records().map((a) => a.leader)).toEqual(piled);
    await t.clock.advance(10_000);
    await t.reconcileT();
    expect(t.records().map((a) => a.leader)).toEqual(t.records().map((a) => a.replicas?.[0]));
  });
});

describe("a held member whose broker failed", () => {
  it("a Decommissioning leader that crashes gets failedSince after the grace, stays Decommissioning, and its partitions elect new leaders", async () => {
    const t = await setup(4);
    t.createTopic({ replicationFactor: 3, partitions: 4 });
    await t.reconcileT();
    const led = t.records().filter((a) => a.leader === "demo-3");
    expect(led.length).toBeGreaterThan(0);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 3;
    });
    await t.clock.advance(1000);
    await t.reconcile();
    await t.reconcileT();
    expect(t.member("demo-3")?.state).toBe("Decommissioning");
    // Replacements are added but cannot catch up; the leader stays.
    for (const a of led) expect(byPartition(t.records(), a.partition)?.leader).toBe("demo-3");
    // Its broker crashes: pod not Ready, admin status silent.
    t.kube.setPodReady(NS, "demo-3", false);
    t.fake.unreachable.add("demo-3");
    await t.clock.advance(1000);
    await t.reconcile();
    await t.clock.advance(GRACE_S * 1000 - 1500);
    await t.reconcile();
    expect(t.member("demo-3")?.failedSince).toBeUndefined();
    await t.clock.advance(2000);
    await t.reconcile();
    expect(t.member("demo-3")).toMatchObject({ state: "Decommissioning" });
    expect(t.member("demo-3")?.failedSince).toBeDefined();
    expect(t.cluster().status?.scale?.decommissioning).toBe("demo-3");
    expect(t.recorder.events.filter((e) => e.reason === "MemberFailed").map((e) => e.type)).toEqual([
      "Warning",
    ]);
    await t.reconcileT();
    for (const a of led) {
      const now = byPartition(t.records(), a.partition);
      expect(now?.leader).not.toBe("demo-3");
      expect(a.isr?.map((e) => e.member)).toContain(now?.leader);
      expect(now?.leaderEpoch).toBe((a.leaderEpoch ?? 0) + 1);
    }
    // It answers again: failedSince cleared, the decommission goes on as before.
    t.kube.setPodReady(NS, "demo-3", true);
    t.fake.unreachable.delete("demo-3");
    await t.clock.advance(1000);
    await t.reconcile();
    expect(t.member("demo-3")?.failedSince).toBeUndefined();
    expect(t.member("demo-3")?.state).toBe("Decommissioning");
  });
});

describe("fan-out children placed away from the parent", () => {
  const ids = ["demo-0", "demo-1", "demo-2"];
  /** Where a topic's partitions would go on a fresh 3-broker cluster, without a parent. */
  const unlinked = (topic: string, rf: number): PartitionAssignment[] => {
    if (rf === 1) {
      const r = assignPartitions({ topic, partitions: 6, previous: [], memberIds: ids, activeIds: ids });
      return r.ok ? r.assignments : [];
    }
    return planReplicatedTopic({
      topic,
      partitions: 6,
      replicationFactor: rf,
      minInsyncReplicas: 2,
      members: ids.map((id) => ({ id, state: "Active" as const, volumeId: `vol-${id.slice(5)}` })),
      previous: [],
    }).assignments;
  };
  for (const rf of [1, 3]) {
    it(`a child (spec.parent) gets each partition's ${rf === 1 ? "owner" : "leader"} on another broker than the parent's (factor ${rf})`, async () => {
      const t = await setup();
      t.createTopic({ replicationFactor: rf, partitions: 6 }, "orders");
      await t.reconcileT("orders");
      const parent = t.records("orders");
      const shares = (as: readonly PartitionAssignment[]) =>
        as.some((a) => a.owner === byPartition(parent, a.partition)?.owner);
      // A child name that, placed without the link, would share an owner with its parent.
      const name = [...Array(20).keys()].map((i) => `audit-${i}`).find((n) => shares(unlinked(n, rf)));
      expect(name).toBeDefined();
      t.createTopic({ replicationFactor: rf, partitions: 6, parent: "orders" }, name);
      await t.reconcileT(name);
      const child = t.records(name);
      expect(child).toHaveLength(6);
      expect(shares(child)).toBe(false);
    });
  }
});
