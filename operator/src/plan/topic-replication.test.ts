import { describe, expect, it } from "vitest";
import type { PartitionAssignment } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  effectiveReplication,
  planReplicatedTopic,
  type ReplicaMemberView,
  type ReplicatedTopicInput,
} from "./topic-replication.ts";

const members = (n: number, over: Record<string, Partial<ReplicaMemberView>> = {}): ReplicaMemberView[] =>
  Array.from({ length: n }, (_, i) => {
    const id = `demo-${i}`;
    return { id, state: "Active" as const, volumeId: `vol-${i}`, ...over[id] };
  });

const input = (over: Partial<ReplicatedTopicInput> = {}): ReplicatedTopicInput => ({
  topic: "orders",
  partitions: 3,
  replicationFactor: 3,
  minInsyncReplicas: 2,
  members: members(3),
  previous: [],
  ...over,
});

/** The ISR as "member@volume". */
const isrOf = (a: PartitionAssignment | undefined) => (a?.isr ?? []).map((e) => `${e.member}@${e.volumeId}`);

/** A broker leader adding a caught-up replica to the ISR, as the data path will (by CAS). */
const expand = (records: PartitionAssignment[], partition: number, member: string, volumeId: string) =>
  records.map((a) =>
    a.partition === partition ? { ...a, isr: [...(a.isr ?? []), { member, volumeId }] } : a,
  );

describe("effectiveReplication", () => {
  it("defaults to 3 on a cluster of at least 3 brokers, else 1; min defaults to min(2, factor)", () => {
    expect(effectiveReplication({}, {}, 3)).toEqual({
      ok: true,
      replicationFactor: 3,
      minInsyncReplicas: 2,
    });
    expect(effectiveReplication({}, {}, 2)).toMatchObject({
      ok: true,
      replicationFactor: 1,
      minInsyncReplicas: 1,
    });
    expect(effectiveReplication({ replicationFactor: 2 }, {}, 5)).toMatchObject({
      replicationFactor: 2,
      minInsyncReplicas: 2,
    });
  });

  it("refuses a factor above the brokers and a min above the factor, with a reason for Ready=False", () => {
    expect(effectiveReplication({ replicationFactor: 4 }, {}, 3)).toMatchObject({
      ok: false,
      reason: "ReplicationFactorAboveBrokers",
    });
    expect(effectiveReplication({ minInsyncReplicas: 3 }, {}, 2)).toMatchObject({
      ok: false,
      reason: "InvalidMinInsyncReplicas",
    });
    const r = effectiveReplication({ replicationFactor: 2, minInsyncReplicas: 3 }, {}, 3);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.message).toMatch(/min_insync_replicas must be an integer from 1 to replication_factor \(2\)/);
  });

  it("keeps the factor recorded at placement when the cluster's size changes", () => {
    const status = {
      replicationFactor: 3,
      minInsyncReplicas: 2,
      assignments: [{ partition: 0, owner: "demo-0" }],
    };
    expect(effectiveReplication({}, status, 1)).toMatchObject({
      ok: true,
      replicationFactor: 3,
      minInsyncReplicas: 2,
    });
    const one = { replicationFactor: 1, minInsyncReplicas: 1 };
    expect(effectiveReplication({}, one, 5)).toMatchObject({ replicationFactor: 1, problem: undefined });
  });

  it("a topic placed before replication settings existed has one copy", () => {
    const legacy = { assignments: [{ partition: 0, owner: "demo-0" }] };
    expect(effectiveReplication({}, legacy, 3)).toEqual({
      ok: true,
      replicationFactor: 1,
      minInsyncReplicas: 1,
      problem: undefined,
    });
  });

  it("a changed min applies; one above the recorded factor is reported and the recorded one stays", () => {
    const status = { replicationFactor: 3, minInsyncReplicas: 2 };
    expect(effectiveReplication({ minInsyncReplicas: 3 }, status, 3)).toMatchObject({ minInsyncReplicas: 3 });
    const bad = effectiveReplication({ minInsyncReplicas: 4 }, status, 3);
    expect(bad).toMatchObject({
      ok: true,
      minInsyncReplicas: 2,
      problem: { reason: "InvalidReplicationSettings" },
    });
  });
});

describe("planReplicatedTopic: placement", () => {
  it("writes the full record: distinct replicas, leader first, epoch 0, every replica in sync on its volume, owner = leader", () => {
    const plan = planReplicatedTopic(input({ partitions: 6 }));
    expect(plan.placed).toBe(6);
    expect(plan.changed).toBe(true);
    expect(plan.waiting).toBeUndefined();
    for (const a of plan.assignments) {
      expect(new Set(a.replicas).size).toBe(3);
      expect(a.leader).toBe(a.replicas?.[0]);
      expect(a.owner).toBe(a.leader);
      expect(a.leaderEpoch).toBe(0);
      expect(isrOf(a)).toEqual((a.replicas ?? []).map((id) => `${id}@vol-${id.slice(5)}`));
    }
    // Leaders spread: two per broker.
    const leaders = plan.assignments.map((a) => a.leader);
    for (const id of ["demo-0", "demo-1", "demo-2"]) expect(leaders.filter((l) => l === id)).toHaveLength(2);
    expect(plan.underReplicated).toEqual([]);
    expect(plan.offline).toEqual([]);
    // Its own output again: nothing to do.
    const again = planReplicatedTopic(input({ partitions: 6, previous: plan.assignments }));
    expect(again.changed).toBe(false);
    expect(again.leaderChanges).toEqual([]);
  });

  it("waits, placing nothing, while fewer brokers than the factor can take a replica, saying why", () => {
    const plan = planReplicatedTopic(
      input({
        members: members(3, { "demo-1": { volumeId: undefined }, "demo-2": { state: "Joining" } }),
      }),
    );
    expect(plan.assignments).toEqual([]);
    expect(plan.changed).toBe(false);
    expect(plan.waiting).toBe(
      "3 partition(s) need 3 replicas on distinct brokers and 1 broker(s) can take one now (demo-1's volume id is not known yet, demo-2 is Joining)",
    );
  });

  it("never places on a broker whose volume is foreign", () => {
    const plan = planReplicatedTopic(
      input({ replicationFactor: 2, members: members(3, { "demo-0": { volumeId: "foreign:abc" } }) }),
    );
    expect(plan.assignments.flatMap((a) => a.replicas)).not.toContain("demo-0");
  });

  it("places partitions added later and keeps the existing records", () => {
    const first = planReplicatedTopic(input());
    const grown = planReplicatedTopic(input({ partitions: 5, previous: first.assignments }));
    expect(grown.placed).toBe(2);
    expect(grown.assignments.slice(0, 3)).toEqual(first.assignments);
  });
});

describe("planReplicatedTopic: election", () => {
  const placed = planReplicatedTopic(input({ partitions: 1 })).assignments;
  const leader = placed[0]?.leader as string;
  const others = (placed[0]?.replicas ?? []).filter((id) => id !== leader);

  it("a Down leader: the first live in-sync replica leads at epoch + 1, the old one leaves the ISR", () => {
    const plan = planReplicatedTopic(
      input({ partitions: 1, members: members(3, { [leader]: { state: "Down" } }), previous: placed }),
    );
    const a = plan.assignments[0];
    expect(a?.leader).toBe(others[0]);
    expect(a?.owner).toBe(others[0]);
    expect(a?.leaderEpoch).toBe(1);
    expect(a?.isr?.map((e) => e.member)).toEqual(others);
    expect(a?.replicas).toEqual(placed[0]?.replicas);
    expect(plan.leaderChanges).toEqual([
      {
        partition: 0,
        from: leader,
        to: others[0],
        leaderEpoch: 1,
        cause: "leader_down",
        reason: `leader ${leader} is Down; ${others[0]} elected`,
      },
    ]);
    // Two live in-sync replicas of three: under-replicated, not offline.
    expect(plan.underReplicated).toEqual([0]);
    expect(plan.offline).toEqual([]);
  });

  it("a leader back on another volume (never Down) is replaced too, and its entry no longer counts", () => {
    const plan = planReplicatedTopic(
      input({ partitions: 1, members: members(3, { [leader]: { volumeId: "vol-new" } }), previous: placed }),
    );
    expect(plan.assignments[0]?.leader).toBe(others[0]);
    expect(plan.leaderChanges[0]?.cause).toBe("leader_volume");
    expect(isrOf(plan.assignments[0])).not.toContain(`${leader}@vol-new`);
  });

  it("no live in-sync replica: offline (owner empty, epoch + 1, ISR kept); the first one back leads", () => {
    const allDown = members(
      3,
      Object.fromEntries(placed[0]!.replicas!.map((id) => [id, { state: "Down" as const }])),
    );
    const off = planReplicatedTopic(input({ partitions: 1, members: allDown, previous: placed }));
    const a = off.assignments[0];
    expect(a).toMatchObject({ leader: null, owner: "", leaderEpoch: 1 });
    expect(off.offline).toEqual([0]);
    expect(off.leaderChanges[0]).toMatchObject({ from: leader, to: null });
    // Still offline: no new epoch every pass.
    const still = planReplicatedTopic(input({ partitions: 1, members: allDown, previous: off.assignments }));
    expect(still.changed).toBe(false);
    // One returns on its volume.
    const back = planReplicatedTopic(
      input({
        partitions: 1,
        members: members(3, {
          [others[0] as string]: { state: "Down" },
          [others[1] as string]: { state: "Down" },
        }),
        previous: off.assignments,
      }),
    );
    expect(back.assignments[0]).toMatchObject({ leader, owner: leader, leaderEpoch: 2 });
    expect(back.leaderChanges[0]?.cause).toBe("offline");
  });

  it("never elects a replica outside the ISR", () => {
    const narrowed = placed.map((a) => ({ ...a, isr: (a.isr ?? []).filter((e) => e.member === leader) }));
    const plan = planReplicatedTopic(
      input({ partitions: 1, members: members(3, { [leader]: { state: "Down" } }), previous: narrowed }),
    );
    expect(plan.assignments[0]).toMatchObject({ leader: null, owner: "" });
  });
});

describe("planReplicatedTopic: reassignment off a leaving member", () => {
  // 4 brokers, RF 3, one partition on demo-0..2, led by demo-2.
  const start: PartitionAssignment[] = [
    {
      partition: 0,
      owner: "demo-2",
      leader: "demo-2",
      replicas: ["demo-2", "demo-0", "demo-1"],
      isr: [
        { member: "demo-2", volumeId: "vol-2" },
        { member: "demo-0", volumeId: "vol-0" },
        { member: "demo-1", volumeId: "vol-1" },
      ],
      leaderEpoch: 4,
    },
  ];
  const leavingLeader = members(4, { "demo-2": { state: "Decommissioning" } });
  const one = (previous: PartitionAssignment[], ms = leavingLeader) =>
    planReplicatedTopic(input({ partitions: 1, members: ms, previous }));

  it("adds a replacement outside the ISR, waits for the leader to add it, moves leadership, then drops the old replica", () => {
    // 1. Replacement added beside the leaving leader; nothing else changes.
    const p1 = one(start);
    expect(p1.assignments[0]).toMatchObject({ leader: "demo-2", leaderEpoch: 4 });
    expect(p1.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-1", "demo-3"]);
    expect(isrOf(p1.assignments[0])).toEqual(["demo-2@vol-2", "demo-0@vol-0", "demo-1@vol-1"]);
    expect(p1.replicasAdded).toEqual([{ partition: 0, member: "demo-3", replacing: ["demo-2"] }]);
    expect(p1.reassigning[0]?.waitingFor).toMatch(/^demo-3 to be in sync/);
    expect(p1.underReplicated).toEqual([0]);
    // 2. Still not in sync: the operator waits, changing nothing.
    const p2 = one(p1.assignments);
    expect(p2.changed).toBe(false);
    // 3. The leader adds demo-3 to the ISR (broker side): leadership moves, epoch + 1, replicas kept.
    const expanded = expand(p2.assignments, 0, "demo-3", "vol-3");
    const p3 = one(expanded);
    expect(p3.assignments[0]).toMatchObject({ leader: "demo-0", owner: "demo-0", leaderEpoch: 5 });
    expect(p3.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-1", "demo-3"]);
    expect(p3.leaderChanges).toEqual([
      {
        partition: 0,
        from: "demo-2",
        to: "demo-0",
        leaderEpoch: 5,
        cause: "leaving",
        reason: "leader demo-2 is leaving; demo-0 (in sync) elected",
      },
    ]);
    expect(p3.replicasDropped).toEqual([]);
    // 4. Next pass: the old replica leaves replicas and ISR.
    const p4 = one(p3.assignments);
    expect(p4.assignments[0]?.replicas).toEqual(["demo-0", "demo-1", "demo-3"]);
    expect(isrOf(p4.assignments[0])).toEqual(["demo-0@vol-0", "demo-1@vol-1", "demo-3@vol-3"]);
    expect(p4.assignments[0]?.leaderEpoch).toBe(5);
    expect(p4.replicasDropped).toEqual([{ partition: 0, members: ["demo-2"] }]);
    expect(p4.underReplicated).toEqual([]);
    // 5. Done: stable.
    expect(one(p4.assignments).changed).toBe(false);
  });

  it("a leaving follower is dropped at once when its replacement is in sync (no epoch bump)", () => {
    const ms = members(4, { "demo-1": { state: "Decommissioning" } });
    const p1 = one(start, ms);
    expect(p1.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-1", "demo-3"]);
    const p2 = one(expand(p1.assignments, 0, "demo-3", "vol-3"), ms);
    expect(p2.assignments[0]).toMatchObject({ leader: "demo-2", leaderEpoch: 4 });
    expect(p2.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-3"]);
    expect(p2.leaderChanges).toEqual([]);
  });

  it("waits for every staying replica to be in sync (a lagging one too), and for a broker to take the replacement", () => {
    const lagging = start.map((a) => ({ ...a, isr: (a.isr ?? []).filter((e) => e.member !== "demo-1") }));
    const p1 = one(lagging);
    const p2 = one(expand(p1.assignments, 0, "demo-3", "vol-3"));
    expect(p2.changed).toBe(false);
    expect(p2.reassigning[0]?.waitingFor).toMatch(/^demo-1 to be in sync/);
    // Three brokers only: no replacement, nothing dropped.
    const three = planReplicatedTopic(
      input({
        partitions: 1,
        members: members(3, { "demo-2": { state: "Decommissioning" } }),
        previous: start,
      }),
    );
    expect(three.changed).toBe(false);
    expect(three.reassigning[0]?.waitingFor).toBe("a broker to take a replacement (2 of 3 replicas stay)");
  });

  it("an election comes first: a Down leader mid-reassignment is replaced by a staying in-sync replica", () => {
    const p1 = one(start);
    // demo-0 (first staying) is leaving too in this variant, so the election must skip it for demo-1.
    const ms = members(4, { "demo-2": { state: "Down" }, "demo-0": { state: "Decommissioning" } });
    const p2 = planReplicatedTopic(input({ partitions: 1, members: ms, previous: p1.assignments }));
    expect(p2.assignments[0]).toMatchObject({ leader: "demo-1", leaderEpoch: 5 });
    expect(p2.leaderChanges[0]?.cause).toBe("leader_down");
  });

  it("a member on a foreign volume is replaced like a leaving one", () => {
    const ms = members(4, { "demo-1": { volumeId: "foreign:0b7e" } });
    const p1 = one(start, ms);
    expect(p1.assignments[0]?.replicas).toContain("demo-3");
    const p2 = one(expand(p1.assignments, 0, "demo-3", "vol-3"), ms);
    expect(p2.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-3"]);
    expect(isrOf(p2.assignments[0])).toEqual(["demo-2@vol-2", "demo-0@vol-0", "demo-3@vol-3"]);
  });

  it("a cancelled decommission (the member Active again) drops the replacement instead", () => {
    const p1 = one(start);
    const back = planReplicatedTopic(input({ partitions: 1, members: members(4), previous: p1.assignments }));
    expect(back.assignments[0]?.replicas).toEqual(["demo-2", "demo-0", "demo-1"]);
    expect(back.assignments[0]?.leaderEpoch).toBe(4);
  });
});

describe("leadership handoff before a planned restart", () => {
  const rec = (over: Partial<PartitionAssignment> = {}): PartitionAssignment => ({
    partition: 0,
    owner: "demo-0",
    leader: "demo-0",
    replicas: ["demo-0", "demo-1", "demo-2"],
    isr: [
      { member: "demo-0", volumeId: "vol-0" },
      { member: "demo-1", volumeId: "vol-1" },
      { member: "demo-2", volumeId: "vol-2" },
    ],
    leaderEpoch: 4,
    ...over,
  });
  const plan = (ms: ReplicaMemberView[], r = rec()) =>
    planReplicatedTopic(input({ partitions: 1, members: ms, previous: [r] }));

  it("a leader in Maintenance hands leadership to the next Active in-sync replica: epoch + 1, ISR unchanged", () => {
    const p = plan(members(3, { "demo-0": { state: "Maintenance" } }));
    expect(p.assignments[0]).toMatchObject({ leader: "demo-1", owner: "demo-1", leaderEpoch: 5 });
    expect(isrOf(p.assignments[0])).toEqual(["demo-0@vol-0", "demo-1@vol-1", "demo-2@vol-2"]);
    expect(p.assignments[0]?.replicas).toEqual(["demo-0", "demo-1", "demo-2"]);
    expect(p.leaderChanges).toEqual([
      expect.objectContaining({
        partition: 0,
        from: "demo-0",
        to: "demo-1",
        leaderEpoch: 5,
        cause: "handoff",
      }),
    ]);
    expect(p.changed).toBe(true);
  });

  it("never to a replica outside the ISR, on another volume, not Active, or failed", () => {
    // demo-1 out of the ISR, demo-2 on another volume: nobody can take it.
    const r = rec({
      isr: [
        { member: "demo-0", volumeId: "vol-0" },
        { member: "demo-2", volumeId: "vol-2" },
      ],
    });
    const none = plan(members(3, { "demo-0": { state: "Maintenance" }, "demo-2": { volumeId: "vol-9" } }), r);
    expect(none.assignments[0]).toMatchObject({ leader: "demo-0", leaderEpoch: 4 });
    expect(none.leaderChanges).toEqual([]);
    for (const over of [{ state: "Joining" as const }, { state: "Maintenance" as const }, { failed: true }]) {
      const p = plan(members(3, { "demo-0": { state: "Maintenance" }, "demo-1": over, "demo-2": over }));
      expect(p.assignments[0]?.leader, JSON.stringify(over)).toBe("demo-0");
    }
    // Only demo-2 can: it gets it.
    const two = plan(members(3, { "demo-0": { state: "Maintenance" }, "demo-1": { state: "Down" } }));
    expect(two.assignments[0]).toMatchObject({ leader: "demo-2", leaderEpoch: 5 });
  });

  it("an election never picks a member in Maintenance while another in-sync replica is live", () => {
    const p = plan(members(3, { "demo-0": { state: "Down" }, "demo-1": { state: "Maintenance" } }));
    expect(p.assignments[0]).toMatchObject({ leader: "demo-2", leaderEpoch: 5 });
    expect(p.leaderChanges[0]?.cause).toBe("leader_down");
  });

  it("a Decommissioning or Maintenance member that failed counts as Down: elected around, never elected", () => {
    const failedLeader = plan(members(3, { "demo-0": { state: "Decommissioning", failed: true } }));
    expect(failedLeader.assignments[0]).toMatchObject({ leader: "demo-1", leaderEpoch: 5 });
    expect(failedLeader.leaderChanges[0]?.cause).toBe("leader_down");
    // Without the failure the decommissioning leader stays until its replacement is in sync.
    const alive = plan(members(4, { "demo-0": { state: "Decommissioning" } }));
    expect(alive.assignments[0]?.leader).toBe("demo-0");
    const onlyFailed = plan(
      members(3, {
        "demo-0": { state: "Down" },
        "demo-1": { state: "Maintenance", failed: true },
        "demo-2": { state: "Down" },
      }),
    );
    expect(onlyFailed.assignments[0]).toMatchObject({ leader: null, owner: "" });
  });
});

describe("preferred-leader balance", () => {
  const led = (partition: number, leader: string, replicas: string[], epoch = 1): PartitionAssignment => ({
    partition,
    owner: leader,
    leader,
    replicas,
    isr: replicas.map((m) => ({ member: m, volumeId: `vol-${m.slice(-1)}` })),
    leaderEpoch: epoch,
  });
  /** Every partition's demo-0 able to lead since long ago. */
  const settledSince = new Map([0, 1, 2].map((p) => [`${p}/demo-0`, 0]));
  const balance = {
    allowed: true,
    maxMoves: 2,
    nowMs: 100_000,
    settleMs: 10_000,
    eligibleSince: settledSince,
  };

  it("moves leadership back to replicas[0] once it has been able to lead for the settle time: epoch + 1, ISR unchanged", () => {
    const prev = [led(0, "demo-1", ["demo-0", "demo-1", "demo-2"], 3)];
    const p = planReplicatedTopic(input({ partitions: 1, previous: prev, balance }));
    expect(p.assignments[0]).toMatchObject({ leader: "demo-0", owner: "demo-0", leaderEpoch: 4 });
    expect(isrOf(p.assignments[0])).toEqual(isrOf(prev[0]));
    expect(p.leaderChanges).toEqual([
      expect.objectContaining({ from: "demo-1", to: "demo-0", cause: "preferred" }),
    ]);
    expect(p.balancePending).toEqual([]);
  });

  it("leaves it while the preferred replica is out of the ISR, on another volume, not Active, or failed", () => {
    const prev = [led(0, "demo-1", ["demo-0", "demo-1", "demo-2"])];
    const notInIsr = [{ ...prev[0]!, isr: prev[0]!.isr!.filter((e) => e.member !== "demo-0") }];
    const cases: Array<[ReplicaMemberView[], PartitionAssignment[]]> = [
      [members(3), notInIsr],
      [members(3, { "demo-0": { volumeId: "vol-new" } }), prev],
      [members(3, { "demo-0": { state: "Joining" } }), prev],
      [members(3, { "demo-0": { state: "Maintenance" } }), prev],
      [members(3, { "demo-0": { state: "Decommissioning" } }), prev],
      [members(3, { "demo-0": { failed: true } }), prev],
    ];
    for (const [ms, previous] of cases) {
      const p = planReplicatedTopic(input({ partitions: 1, members: ms, previous, balance }));
      expect(p.assignments[0]?.leader).toBe("demo-1");
      expect(p.balancePending).toEqual([]);
      // Not able to lead: its clock is dropped, and starts again when it can.
      expect(p.balanceEligible.size).toBe(0);
    }
  });

  it("waits until the preferred replica has been able to lead for the settle time, and says when to look again", () => {
    const prev = [led(0, "demo-1", ["demo-0", "demo-1", "demo-2"])];
    const first = planReplicatedTopic(
      input({ partitions: 1, previous: prev, balance: { ...balance, eligibleSince: undefined } }),
    );
    expect(first.assignments[0]?.leader).toBe("demo-1");
    expect(first.balancePending).toEqual([0]);
    expect(first.balanceRecheckMs).toBe(10_000);
    expect(first.balanceEligible).toEqual(new Map([["0/demo-0", 100_000]]));
    const soon = planReplicatedTopic(
      input({
        partitions: 1,
        previous: prev,
        balance: { ...balance, nowMs: 106_000, eligibleSince: first.balanceEligible },
      }),
    );
    expect(soon.assignments[0]?.leader).toBe("demo-1");
    expect(soon.balanceRecheckMs).toBe(4_000);
    const later = planReplicatedTopic(
      input({
        partitions: 1,
        previous: prev,
        balance: { ...balance, nowMs: 110_000, eligibleSince: soon.balanceEligible },
      }),
    );
    expect(later.assignments[0]?.leader).toBe("demo-0");
  });

  it("moves at most maxMoves partitions per pass, none when not allowed (a roll or a scale runs)", () => {
    const prev = [0, 1, 2].map((p) => led(p, "demo-1", ["demo-0", "demo-1", "demo-2"]));
    const p = planReplicatedTopic(input({ previous: prev, balance }));
    expect(p.assignments.map((a) => a.leader)).toEqual(["demo-0", "demo-0", "demo-1"]);
    expect(p.balancePending).toEqual([2]);
    expect(p.balanceRecheckMs).toBe(0);
    const again = planReplicatedTopic(input({ previous: p.assignments, balance }));
    expect(again.assignments.map((a) => a.leader)).toEqual(["demo-0", "demo-0", "demo-0"]);
    const off = planReplicatedTopic(input({ previous: prev, balance: { ...balance, allowed: false } }));
    expect(off.assignments.map((a) => a.leader)).toEqual(["demo-1", "demo-1", "demo-1"]);
    expect(off.changed).toBe(false);
    expect(off.balanceEligible.size).toBe(0);
    const absent = planReplicatedTopic(input({ previous: prev }));
    expect(absent.changed).toBe(false);
  });

  it("does not pull leadership off a leader in a planned restart to a preferred one: the handoff decides", () => {
    // demo-0 preferred but Maintenance; demo-1 leads in Maintenance too: handoff to demo-2.
    const prev = [led(0, "demo-1", ["demo-0", "demo-1", "demo-2"])];
    const ms = members(3, { "demo-0": { state: "Maintenance" }, "demo-1": { state: "Maintenance" } });
    const p = planReplicatedTopic(input({ partitions: 1, members: ms, previous: prev, balance }));
    expect(p.assignments[0]?.leader).toBe("demo-2");
    expect(p.leaderChanges.map((c) => c.cause)).toEqual(["handoff"]);
  });
});

describe("fan-out children placed away from the parent", () => {
  it("a new partition's leader avoids the parent's leader of the same partition when another broker can lead", () => {
    const base = planReplicatedTopic(input({ partitions: 3 }));
    const avoidLeaders = new Map(base.assignments.map((a) => [a.partition, a.leader as string]));
    const child = planReplicatedTopic(input({ partitions: 3, avoidLeaders }));
    for (const a of child.assignments) {
      expect(a.leader).not.toBe(avoidLeaders.get(a.partition));
      expect(new Set(a.replicas).size).toBe(3);
      expect(a.leader).toBe(a.replicas?.[0]);
    }
    // Placed ones stay (the sticky rule): a later parent leader changes nothing.
    const flipped = new Map(child.assignments.map((a) => [a.partition, a.leader as string]));
    const again = planReplicatedTopic(
      input({ partitions: 3, previous: child.assignments, avoidLeaders: flipped }),
    );
    expect(again.changed).toBe(false);
  });
});
