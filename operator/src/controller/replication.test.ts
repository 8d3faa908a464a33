// The operator's side of replication through the controllers, against the
// fake API server and fake brokers: member volume ids, placement of a
// replicated topic, elections by compare-and-swap, reassignment off a
// member being decommissioned (waiting for the leader's ISR expansion).

import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type {
  NaradCluster,
  NaradTopic,
  NaradTopicSpec,
  PartitionAssignment,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { FakeBrokerClient } from "../broker-client/fake.ts";
import { guardedApi, type KubeApi } from "../kube/api.ts";
import { MemoryRecorder } from "../kube/events.ts";
import { ManualClock } from "../kube/manual-clock.ts";
import { MemoryStorageApi } from "../kube/storage-api.ts";
import { OperatorMetrics } from "../metrics.ts";
import { getCondition } from "../plan/conditions.ts";
import { reconcileCluster } from "./cluster/reconcile.ts";
import { ControllerMemory, type ReconcileDeps } from "./deps.ts";
import { FakeKube } from "./fake-kube.ts";
import { reconcileTopic } from "./topic/reconcile.ts";

const NS = "ns1";
const GRACE_S = 10;

async function setup(brokers = 3, zones?: Record<string, string>) {
  const clock = new ManualClock(Date.parse("2026-12-04T12:00:00Z"));
  const kube = new FakeKube(() => clock.now());
  const recorder = new MemoryRecorder();
  const fake = new FakeBrokerClient();
  const metrics = new OperatorMetrics();
  let api: KubeApi = guardedApi(kube, new AbortController().signal);
  const deps: ReconcileDeps = {
    caches: kube.caches,
    get api() {
      return api;
    },
    storage: new MemoryStorageApi(),
    recorder,
    brokers: fake,
    clock,
    log: pino({ level: "silent" }),
    memory: new ControllerMemory(),
    defaultBrokerImage: undefined,
    metrics,
    ...(zones !== undefined ? { zones: { zoneOf: async (node: string) => zones[node] } } : {}),
  };
  kube.create(kube.clusters, {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: NS },
    spec: { replicas: brokers, image: "ghcr.io/narad/narad:1.0", rollout: { downGraceSeconds: GRACE_S } },
  });
  const volume = (i: number, uuid = `vol-${i}`) =>
    fake.volumes.set(`demo-${i}`, { state: "own", uuid, memberId: `demo-${i}` });
  for (let i = 0; i < brokers; i++) volume(i);
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
  /** The member's pod gone and its broker silent, until the grace has passed: Down. */
  const kill = async (id: string) => {
    kube.pods.remove(NS, id);
    fake.unreachable.add(id);
    await reconcile();
    await clock.advance(GRACE_S * 1000 + 1000);
    await reconcile();
    expect(cluster().status?.members?.find((m) => m.id === id)?.state).toBe("Down");
  };
  const metric = async (name: string) => (await metrics.registry.getSingleMetricAsString(name)).trim();
  return {
    clock,
    kube,
    recorder,
    fake,
    deps,
    metrics,
    cluster,
    reconcile,
    createTopic,
    topic,
    records,
    reconcileT,
    kill,
    volume,
    metric,
    setApi: (a: KubeApi) => {
      api = a;
    },
  };
}

const leaderOf = (records: readonly PartitionAssignment[], p: number) =>
  records.find((a) => a.partition === p)?.leader;
const members = (a: PartitionAssignment | undefined) =>
  (a?.isr ?? []).map((e) => `${e.member}@${e.volumeId}`);

describe("member volume ids", () => {
  it("are recorded from the brokers' status; a new one is a Warning; a silent broker keeps its last", async () => {
    const t = await setup();
    expect(t.cluster().status?.members?.map((m) => m.volumeId)).toEqual(["vol-0", "vol-1", "vol-2"]);
    const epoch = t.cluster().status?.membershipEpoch;
    t.volume(1, "vol-1b");
    t.fake.unreachable.add("demo-2");
    await t.reconcile();
    expect(t.cluster().status?.members?.map((m) => m.volumeId)).toEqual(["vol-0", "vol-1b", "vol-2"]);
    expect(t.cluster().status?.membershipEpoch).toBe(epoch);
    const ev = t.recorder.events.filter((e) => e.reason === "VolumeChanged");
    expect(ev.map((e) => [e.type, e.message])).toEqual([
      [
        "Warning",
        "demo-1 runs on another volume: vol-1 → vol-1b; its replicas are out of sync until their leaders add it back",
      ],
    ]);
  });
});

describe("a replicated topic", () => {
  it("gets its default factor on a 3-broker cluster: full records, effective settings recorded", async () => {
    const t = await setup();
    t.createTopic();
    await t.reconcileT();
    const s = t.topic().status;
    expect(s?.replicationFactor).toBe(3);
    expect(s?.minInsyncReplicas).toBe(2);
    expect(s?.underReplicatedPartitions).toBe(0);
    expect(s?.offlinePartitions).toBe(0);
    expect(s?.phase).toBe("Ready");
    expect(s?.assignments).toHaveLength(3);
    for (const a of s?.assignments ?? []) {
      expect(a.leader).toBe(a.replicas?.[0]);
      expect(a.owner).toBe(a.leader);
      expect(a.leaderEpoch).toBe(0);
      expect(members(a)).toEqual((a.replicas ?? []).map((id) => `${id}@vol-${id.slice(5)}`));
    }
    expect(new Set(s?.assignments?.map((a) => a.leader)).size).toBe(3);
    expect(getCondition(s?.conditions, "Ready")).toMatchObject({ status: "True", reason: "Assigned" });
    expect(getCondition(s?.conditions, "Degraded")).toMatchObject({
      status: "False",
      reason: "FullyReplicated",
    });
    // A later change of the cluster's size never changes the recorded factor.
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (spec) => {
      spec.replicas = 2;
    });
    t.kube.writes.length = 0;
    await t.reconcileT();
    expect(t.topic().status?.replicationFactor).toBe(3);
    expect(t.kube.writes).toEqual([]);
  });

  it("waits for volume ids (Ready=False, no assignment) and places once they are known", async () => {
    const t = await setup();
    t.fake.volumes.delete("demo-2");
    t.kube.clusters.put({
      ...t.cluster(),
      status: {
        ...t.cluster().status,
        members: t.cluster().status?.members?.map((m) => {
          if (m.id !== "demo-2") return m;
          const { volumeId: _, ...rest } = m;
          return rest;
        }),
      },
    });
    t.createTopic({ replicationFactor: 3 });
    const r = await t.reconcileT();
    expect(t.records()).toEqual([]);
    expect(getCondition(t.topic().status?.conditions, "Ready")).toMatchObject({
      status: "False",
      reason: "WaitingForBrokers",
    });
    expect(getCondition(t.topic().status?.conditions, "Ready")?.message).toContain(
      "demo-2's volume id is not known yet",
    );
    expect(r.requeueAfterMs).toBe(2000);
    t.volume(2);
    await t.reconcile();
    await t.reconcileT();
    expect(t.records()).toHaveLength(3);
  });

  it("a factor above the brokers or a min above the factor: Ready=False with the reason, nothing assigned", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 4 }, "big");
    await t.reconcileT("big");
    expect(t.records("big")).toEqual([]);
    expect(getCondition(t.topic("big").status?.conditions, "Ready")).toMatchObject({
      status: "False",
      reason: "ReplicationFactorAboveBrokers",
      message: "replication_factor 4 needs at least 4 brokers, the cluster has 3",
    });
    t.createTopic({ replicationFactor: 1, minInsyncReplicas: 2 }, "odd");
    await t.reconcileT("odd");
    expect(t.records("odd")).toEqual([]);
    expect(getCondition(t.topic("odd").status?.conditions, "Ready")?.reason).toBe("InvalidMinInsyncReplicas");
    expect(t.topic("odd").status?.replicationFactor).toBeUndefined();
  });

  it("a single-copy topic keeps today's {partition, owner} records exactly", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 1 });
    await t.reconcileT();
    expect(t.records().map((a) => Object.keys(a).sort())).toEqual([
      ["owner", "partition"],
      ["owner", "partition"],
      ["owner", "partition"],
    ]);
    expect(t.topic().status).toMatchObject({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(t.topic().status?.underReplicatedPartitions).toBeUndefined();
    // A Down owner keeps its partitions (brokers reroute): no election for one copy.
    const owner = t.records()[0]?.owner as string;
    const before = structuredClone(t.records());
    await t.kill(owner);
    await t.reconcileT();
    expect(t.records()).toEqual(before);
  });

  it("a Down leader is replaced in the next topic reconcile: epoch + 1, owner follows, Event, metrics, Degraded", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    const victim = leaderOf(t.records(), 0) as string;
    await t.kill(victim);
    t.kube.writes.length = 0;
    const r = await t.reconcileT();
    const a = t.records()[0];
    expect(a?.leader).not.toBe(victim);
    expect(a?.owner).toBe(a?.leader);
    expect(a?.leaderEpoch).toBe(1);
    expect(a?.isr?.map((e) => e.member)).not.toContain(victim);
    // One compare-and-swap for the whole topic.
    expect(t.kube.writes).toEqual(["status naradtopics orders"]);
    const s = t.topic().status;
    // Every partition has a replica on the Down member (3 brokers, factor 3).
    expect(s?.underReplicatedPartitions).toBe(3);
    expect(s?.offlinePartitions).toBe(0);
    expect(getCondition(s?.conditions, "Degraded")).toMatchObject({
      status: "True",
      reason: "UnderReplicated",
    });
    const elected = t.recorder.events.filter((e) => e.reason === "LeaderElected");
    expect(elected.map((e) => e.message)).toContain(
      `partition 0: leader ${victim} → ${a?.leader}, leader epoch 1 (leader ${victim} is Down; ${a?.leader} elected)`,
    );
    expect(await t.metric("narad_operator_leader_elections_total")).toContain(
      `narad_operator_leader_elections_total{namespace="ns1",cluster="demo",topic="orders",cause="leader_down"} 1`,
    );
    expect(await t.metric("narad_operator_under_replicated_partitions")).toContain(
      `{namespace="ns1",cluster="demo",topic="orders"} 3`,
    );
    expect(r.requeueAfterMs).toBe(5000);
    // Nothing more to do while it stays Down.
    t.kube.writes.length = 0;
    await t.reconcileT();
    expect(t.kube.writes).toEqual([]);
  });

  it("no live in-sync replica: offline (owner empty) with a Warning; the first one back leads again", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 2, minInsyncReplicas: 1, partitions: 1 });
    await t.reconcileT();
    const [first, second] = t.records()[0]?.replicas ?? [];
    await t.kill(first as string);
    await t.reconcileT();
    expect(leaderOf(t.records(), 0)).toBe(second);
    await t.kill(second as string);
    await t.reconcileT();
    expect(t.records()[0]).toMatchObject({ leader: null, owner: "", leaderEpoch: 2 });
    expect(t.topic().status?.offlinePartitions).toBe(1);
    expect(getCondition(t.topic().status?.conditions, "Degraded")?.reason).toBe("PartitionsOffline");
    expect(t.recorder.events.find((e) => e.reason === "PartitionOffline")?.type).toBe("Warning");
    expect(await t.metric("narad_operator_offline_partitions")).toContain("} 1");
    // The first leader was dropped from the ISR (min 1): only the second can lead again.
    t.fake.unreachable.delete(first as string);
    t.kube.addPod(NS, "demo", Number(first?.slice(5)), true);
    await t.reconcile();
    await t.reconcileT();
    expect(t.records()[0]?.leader).toBeNull();
    t.fake.unreachable.delete(second as string);
    t.kube.addPod(NS, "demo", Number(second?.slice(5)), true);
    await t.reconcile();
    await t.reconcileT();
    expect(t.records()[0]).toMatchObject({ leader: second, owner: second, leaderEpoch: 3 });
  });

  it("a leader back on an empty volume within the grace (never Down) is replaced too", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    const victim = leaderOf(t.records(), 1) as string;
    t.volume(Number(victim.slice(5)), "vol-fresh");
    await t.reconcile();
    expect(t.cluster().status?.members?.find((m) => m.id === victim)).toMatchObject({
      state: "Active",
      volumeId: "vol-fresh",
    });
    await t.reconcileT();
    const a = t.records()[1];
    expect(a?.leader).not.toBe(victim);
    expect(a?.leaderEpoch).toBe(1);
    expect(members(a)).not.toContain(`${victim}@vol-fresh`);
    expect(t.recorder.events.find((e) => e.reason === "LeaderElected")?.message).toContain(
      `leader ${victim} runs on another volume`,
    );
    expect(await t.metric("narad_operator_leader_elections_total")).toContain('cause="leader_volume"} 1');
  });

  it("a conflicting write (a broker's ISR change) is re-read and decided again, never overwritten", async () => {
    const t = await setup();
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    const victim = leaderOf(t.records(), 0) as string;
    await t.kill(victim);
    // The leader of partition 2 (not the victim's) shrinks its ISR just
    // before our write lands: our write conflicts.
    const p2 = t.records()[2] as PartitionAssignment;
    const shrunk = (p2.isr ?? []).filter((e) => e.member !== victim && e.member !== p2.leader).slice(0, 1);
    let raced = false;
    const real = t.deps.api;
    t.setApi({
      ...real,
      getTopic: (ns, name) => real.getTopic(ns, name),
      patchStatus: async (ref, status, rv) => {
        if (!raced && ref.plural === "naradtopics") {
          raced = true;
          const live = t.topic();
          const assignments = (live.status?.assignments ?? []).map((a) =>
            a.partition === 2
              ? { ...a, isr: (a.isr ?? []).filter((e) => !shrunk.some((x) => x.member === e.member)) }
              : a,
          );
          await t.kube.patchStatus(ref, { assignments }, live.metadata.resourceVersion ?? "");
        }
        return real.patchStatus(ref, status, rv);
      },
    } as KubeApi);
    await t.reconcileT();
    expect(raced).toBe(true);
    expect(t.kube.topicReads).toContain("orders");
    // The election landed, and the broker's shrink of partition 2 is kept.
    expect(t.records()[0]?.leaderEpoch).toBe(1);
    expect(members(t.records()[2]).some((m) => m.startsWith(`${shrunk[0]?.member}@`))).toBe(false);
  });

  it("spreads a partition's replicas across zones", async () => {
    const zones = {
      "node-0": "a",
      "node-1": "a",
      "node-2": "b",
      "node-3": "b",
      "node-4": "c",
      "node-5": "c",
    };
    const t = await setup(6, zones);
    t.createTopic({ replicationFactor: 3, partitions: 6 });
    await t.reconcileT();
    for (const a of t.records())
      expect(
        new Set((a.replicas ?? []).map((id) => zones[`node-${id.slice(5)}` as keyof typeof zones])).size,
      ).toBe(3);
  });
});

describe("decommission of a member holding replicas", () => {
  it("adds a replacement, waits for the leader to add it to the ISR, moves leadership, drops the old replica, then removes the member", async () => {
    const t = await setup(4);
    t.createTopic({ replicationFactor: 3, partitions: 4 });
    await t.reconcileT();
    const holding = () => t.records().filter((a) => a.replicas?.includes("demo-3"));
    expect(holding().length).toBeGreaterThan(0);
    const ledByIt = holding()
      .filter((a) => a.leader === "demo-3")
      .map((a) => a.partition);
    expect(ledByIt.length).toBeGreaterThan(0);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 3;
    });
    /** A cluster pass, the topic reconcile it triggers, and the brokers' views of the member states. */
    const pass = async () => {
      await t.clock.advance(1000);
      await t.reconcile();
      t.fake.decommissioning.clear();
      for (const m of t.cluster().status?.members ?? [])
        if (m.state === "Decommissioning") t.fake.decommissioning.add(m.id);
      await t.reconcileT();
    };
    await pass();
    expect(t.cluster().status?.members?.find((m) => m.id === "demo-3")?.state).toBe("Decommissioning");
    // A replacement beside each of its replicas, outside the ISR.
    for (const a of holding()) {
      expect(a.replicas).toHaveLength(4);
      expect(a.isr).toHaveLength(3);
    }
    expect(t.recorder.events.filter((e) => e.reason === "ReplicaAdded")).toHaveLength(holding().length);
    // The brokers do not expand the ISR: it waits, and says so.
    for (let i = 0; i < 5; i++) await pass();
    expect(t.cluster().status?.members?.find((m) => m.id === "demo-3")?.state).toBe("Decommissioning");
    expect(getCondition(t.cluster().status?.conditions, "Progressing")?.message).toMatch(
      /demo-3: \d+ replicated partition\(s\) still list it \(\d+ led by it\), waiting for their replacement replicas to be in sync/,
    );
    expect(getCondition(t.topic().status?.conditions, "Degraded")?.message).toMatch(
      /replaces demo-3: waiting for demo-\d to be in sync/,
    );
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(4);
    // Each leader adds its replacement once it has caught up (a CAS by the broker).
    const expanded = t.records().map((a) => {
      const added = (a.replicas ?? []).find((id) => !(a.isr ?? []).some((e) => e.member === id));
      return added === undefined
        ? a
        : { ...a, isr: [...(a.isr ?? []), { member: added, volumeId: `vol-${added.slice(5)}` }] };
    });
    await t.kube.patchStatus(
      { plural: "naradtopics", namespace: NS, name: "orders" },
      { assignments: expanded },
      t.topic().metadata.resourceVersion ?? "",
    );
    await pass();
    // Leadership moved off it first (epoch + 1), its replicas still listed.
    for (const p of ledByIt) {
      const a = t.records()[p];
      expect(a?.leader).not.toBe("demo-3");
      expect(a?.leaderEpoch).toBe(1);
    }
    for (let i = 0; i < 6 && t.kube.statefulSets.get(NS, "demo")?.spec?.replicas !== 3; i++) await pass();
    expect(holding()).toEqual([]);
    for (const a of t.records()) {
      expect(a.replicas).toHaveLength(3);
      expect(a.isr).toHaveLength(3);
    }
    expect(t.kube.statefulSets.get(NS, "demo")?.spec?.replicas).toBe(3);
    expect(t.recorder.reasons()).toEqual(expect.arrayContaining(["ReplicaRemoved", "MemberRemoved"]));
    expect(t.recorder.events.filter((e) => e.reason === "LeaderElected").map((e) => e.message)).toContain(
      `partition ${ledByIt[0]}: leader demo-3 → ${t.records()[ledByIt[0] as number]?.leader}, leader epoch 1 (leader demo-3 is leaving; ${t.records()[ledByIt[0] as number]?.leader} (in sync) elected)`,
    );
  });

  it("refuses a scale-down below a replicated topic's factor", async () => {
    const t = await setup(3);
    t.createTopic({ replicationFactor: 3 });
    await t.reconcileT();
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.replicas = 2;
    });
    await t.reconcile();
    expect(getCondition(t.cluster().status?.conditions, "Degraded")).toMatchObject({
      status: "True",
      reason: "ScaleDownBlocked",
    });
    expect(getCondition(t.cluster().status?.conditions, "Degraded")?.message).toContain(
      "topic(s) orders (replication factor 3) need 3 brokers, 2 would remain",
    );
    expect(t.cluster().status?.members?.every((m) => m.state === "Active")).toBe(true);
  });
});
