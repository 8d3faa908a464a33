import { describe, expect, it } from "vitest";
import type {
  MemberStatus,
  PartitionAssignment,
  ScaleStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { planMembers } from "./members.ts";
import type { PodView } from "./pods.ts";
import {
  type MoveProbe,
  moveKey,
  planScale,
  type ScaleInput,
  type ScalePlan,
  type ScaleTopic,
  statefulSetReplicas,
} from "./scale.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");

function pod(ordinal: number, over: Partial<PodView> = {}): PodView {
  return {
    name: `demo-${ordinal}`,
    ordinal,
    uid: `uid-${ordinal}`,
    podIP: `127.1.0.${ordinal + 1}`,
    ready: true,
    notReadySinceMs: undefined,
    terminating: false,
    revision: "r1",
    ...over,
  };
}

function member(ordinal: number, state: MemberStatus["state"] = "Active"): MemberStatus {
  return { id: `demo-${ordinal}`, pod: `demo-${ordinal}`, ordinal, state, since: "2026-11-29T11:00:00Z" };
}

function topic(name: string, owners: number[]): ScaleTopic {
  return { name, assignments: owners.map((o, partition) => ({ partition, owner: `demo-${o}` })) };
}

function input(over: Partial<ScaleInput>): ScaleInput {
  return {
    nowMs: NOW,
    replicas: 3,
    members: [0, 1, 2].map((i) => member(i)),
    pods: [0, 1, 2].map((i) => pod(i)),
    scale: undefined,
    topics: [],
    rollBusy: undefined,
    rebalance: false,
    rebalanceRequest: undefined,
    moveProbes: new Map(),
    decommissionProbe: undefined,
    maxMoves: 2,
    timing: { stallMs: 300_000, retryBackoffMs: 30_000, retryBackoffMaxMs: 600_000 },
    ...over,
  };
}

describe("statefulSetReplicas", () => {
  it("grows at once, shrinks only past Removed members", () => {
    const five = [0, 1, 2, 3, 4].map((i) => member(i));
    expect(statefulSetReplicas(5, 3, five.slice(0, 3))).toBe(5);
    expect(statefulSetReplicas(3, undefined, [])).toBe(3);
    expect(statefulSetReplicas(2, 5, five)).toBe(5);
    expect(statefulSetReplicas(2, 5, [...five.slice(0, 4), member(4, "Removed")])).toBe(4);
    expect(
      statefulSetReplicas(2, 5, [...five.slice(0, 3), member(3, "Decommissioning"), member(4, "Removed")]),
    ).toBe(4);
    // Removed member already dropped from the list (pod gone).
    expect(statefulSetReplicas(2, 4, five.slice(0, 3))).toBe(3);
  });
});

describe("planScale: refusals", () => {
  const five = [0, 1, 2, 3, 4];
  it("refuses while a roll is in progress, and changes nothing", () => {
    const p = planScale(
      input({
        replicas: 3,
        members: five.map((i) => member(i)),
        pods: five.map((i) => pod(i)),
        rollBusy: "demo-1 in a planned restart",
      }),
    );
    expect(p.blocked).toMatch(/rolling restart is in progress/);
    expect(p.holds.size).toBe(0);
    expect(p.next).toBeUndefined();
  });

  it("refuses when a remaining member is Down or not Ready", () => {
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1, "Down"), member(2), member(3), member(4)],
        pods: five.map((i) => pod(i, i === 1 ? { ready: false } : {})),
      }),
    );
    expect(p.blocked).toMatch(/demo-1 is Down/);
    const q = planScale(
      input({
        replicas: 3,
        members: five.map((i) => member(i)),
        pods: five.map((i) => pod(i, i === 2 ? { ready: false } : {})),
      }),
    );
    expect(q.blocked).toMatch(/demo-2's pod is not Ready/);
  });

  it("refuses to decommission a Down member that owns partitions (its data cannot be copied)", () => {
    const p = planScale(
      input({
        replicas: 4,
        members: [...[0, 1, 2, 3].map((i) => member(i)), member(4, "Down")],
        pods: [0, 1, 2, 3].map((i) => pod(i)),
        topics: [topic("t", [4, 0, 1])],
      }),
    );
    expect(p.blocked).toMatch(/demo-4 is Down and owns 1 partition/);
  });
});

/**
 * Drives planScale + planMembers through passes the way the controller does,
 * with a scripted destination: moves report "ready" one pass after they are
 * started and "done" one pass after their swap.
 */
class Sim {
  members: MemberStatus[];
  pods: PodView[];
  topics: ScaleTopic[];
  scale: ScaleStatus | undefined;
  replicas: number;
  stsReplicas: number;
  broker = new Map<string, { state: "copying" | "ready" | "done"; swapped: boolean }>();
  pendingWal = new Map<string, number>();
  /** Members whose broker has not seen its own Decommissioning yet. */
  viewLags = new Set<string>();
  heldCopies = new Map<string, number>();
  events: string[] = [];
  plans: ScalePlan[] = [];
  rebalance = false;
  concurrent = 0;

  constructor(n: number, topics: ScaleTopic[]) {
    this.members = [...Array(n).keys()].map((i) => member(i));
    this.pods = [...Array(n).keys()].map((i) => pod(i));
    this.topics = topics;
    this.replicas = n;
    this.stsReplicas = n;
    this.scale = undefined;
  }

  pass(): ScalePlan {
    // StatefulSet from persisted members (step-statefulset), pods follow.
    this.stsReplicas = statefulSetReplicas(this.replicas, this.stsReplicas, this.members);
    this.pods = this.pods.filter((p) => p.ordinal < this.stsReplicas);
    for (let i = 0; i < this.stsReplicas; i++)
      if (!this.pods.some((p) => p.ordinal === i)) this.pods.push(pod(i));
    const probes = new Map<string, MoveProbe>();
    for (const m of this.scale?.moves ?? []) {
      const b = this.broker.get(moveKey(m));
      probes.set(moveKey(m), b === undefined ? { kind: "unknown" } : { kind: "state", state: b.state });
    }
    const dec = this.scale?.decommissioning;
    const plan = planScale(
      input({
        replicas: this.replicas,
        members: this.members,
        pods: this.pods,
        scale: this.scale,
        topics: this.topics,
        rebalance: this.rebalance,
        moveProbes: probes,
        decommissionProbe:
          dec === undefined
            ? undefined
            : {
                reachable: true,
                pendingRecords: this.pendingWal.get(dec) ?? 0,
                ownedPartitions: this.topics.reduce(
                  (n, t) => n + t.assignments.filter((a) => a.owner === dec).length,
                  0,
                ),
                // The broker sees Decommissioning one pass after the operator writes it.
                refusingProduce:
                  this.members.find((m) => m.id === dec)?.state === "Decommissioning" &&
                  !this.viewLags.has(dec),
                movedAwayCopies: this.heldCopies.get(dec) ?? 0,
              },
      }),
    );
    this.plans.push(plan);
    // Broker side: copies advance, swapped ones complete.
    for (const [k, b] of this.broker) {
      if (b.swapped) b.state = "done";
      else if (b.state === "copying") b.state = "ready";
      if (b.state === "done") this.broker.delete(k);
    }
    for (const m of plan.cancel) this.broker.delete(moveKey(m));
    for (const m of plan.start) this.broker.set(moveKey(m), { state: "copying", swapped: false });
    for (const m of plan.swap) {
      const t = this.topics.find((x) => x.name === m.topic);
      const a = t?.assignments.find((x) => x.partition === m.partition) as PartitionAssignment;
      expect(a.owner).toBe(m.from);
      a.owner = m.to;
      const b = this.broker.get(moveKey(m));
      if (b !== undefined) b.swapped = true;
    }
    this.concurrent = Math.max(this.concurrent, plan.next?.moves?.length ?? 0);
    const res = planMembers({
      statefulSetName: "demo",
      replicas: this.replicas,
      pods: this.pods,
      previous: this.members,
      previousEpoch: 1,
      downGraceMs: 30_000,
      nowMs: NOW,
      notReadySinceMs: new Map(),
      port: 7942,
      holds: plan.holds,
    });
    this.members = res.members;
    this.scale = plan.next;
    this.events.push(...plan.events.map((e) => `${e.reason}: ${e.message}`));
    return plan;
  }

  owners(): Map<string, number> {
    const c = new Map<string, number>();
    for (const t of this.topics) for (const a of t.assignments) c.set(a.owner, (c.get(a.owner) ?? 0) + 1);
    return c;
  }
}

describe("planScale: decommission", () => {
  it("5 → 2: one member at a time, highest first, every partition moved, at most 2 moves in flight", () => {
    const sim = new Sim(5, [topic("a", [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]), topic("b", [4, 3, 2, 1, 0, 4])]);
    sim.replicas = 2;
    const removedOrder: string[] = [];
    for (let i = 0; i < 200 && (sim.stsReplicas > 2 || sim.scale !== undefined); i++) {
      const before = new Set(sim.members.filter((m) => m.state === "Removed").map((m) => m.id));
      sim.pass();
      for (const m of sim.members) if (m.state === "Removed" && !before.has(m.id)) removedOrder.push(m.id);
      // Never two members decommissioning at once.
      expect(sim.members.filter((m) => m.state === "Decommissioning").length).toBeLessThanOrEqual(1);
    }
    expect(removedOrder).toEqual(["demo-4", "demo-3", "demo-2"]);
    expect(sim.stsReplicas).toBe(2);
    expect(sim.scale).toBeUndefined();
    expect(sim.concurrent).toBe(2);
    const owners = sim.owners();
    expect([...owners.keys()].sort()).toEqual(["demo-0", "demo-1"]);
    expect(owners.get("demo-0")).toBe(8);
    expect(owners.get("demo-1")).toBe(8);
    expect(sim.members.map((m) => m.id)).toEqual(["demo-0", "demo-1"]);
    expect(sim.events.filter((e) => e.startsWith("PartitionMoved")).length).toBe(4 + 3 + 3);
    expect(sim.events.filter((e) => e.startsWith("MemberRemoved")).length).toBe(3);
  });

  it("waits for the WAL to drain before Removed", () => {
    const sim = new Sim(3, [topic("a", [0, 1, 2])]);
    sim.replicas = 2;
    sim.pendingWal.set("demo-2", 5);
    for (let i = 0; i < 20; i++) sim.pass();
    expect(sim.members.find((m) => m.id === "demo-2")?.state).toBe("Decommissioning");
    expect(sim.owners().get("demo-2")).toBeUndefined();
    expect(sim.plans.at(-1)?.progress?.message).toMatch(/draining its WAL \(5 record/);
    sim.pendingWal.set("demo-2", 0);
    for (let i = 0; i < 5; i++) sim.pass();
    expect(sim.stsReplicas).toBe(2);
    expect(sim.members.map((m) => m.id)).toEqual(["demo-0", "demo-1"]);
  });

  it("persists a move before starting it, and starts it on the destination in a later pass", () => {
    const scale: ScaleStatus = { decommissioning: "demo-3", moves: [], movesDone: 0 };
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), member(3, "Decommissioning")],
        pods: [0, 1, 2, 3].map((i) => pod(i)),
        scale,
        topics: [topic("a", [3, 3, 3, 0])],
      }),
    );
    expect(p.start).toEqual([]);
    expect(p.next?.moves?.map((m) => [m.partition, m.from, m.to, m.state])).toEqual([
      [0, "demo-3", "demo-1", "pending"],
      [1, "demo-3", "demo-2", "pending"],
    ]);
    const q = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), member(3, "Decommissioning")],
        pods: [0, 1, 2, 3].map((i) => pod(i)),
        scale: p.next,
        topics: [topic("a", [3, 3, 3, 0])],
      }),
    );
    expect(q.start.map((m) => m.partition)).toEqual([0, 1]);
    expect(q.next?.moves?.length).toBe(2);
  });

  it("a pending move that finds an earlier move's end state on its destination starts anyway", () => {
    for (const state of ["done", "cancelled", "failed"] as const) {
      const move = {
        topic: "a",
        partition: 0,
        from: "demo-3",
        to: "demo-1",
        startedAt: "x",
        state: "pending" as const,
      };
      const p = planScale(
        input({
          replicas: 3,
          members: [member(0), member(1), member(2), member(3, "Decommissioning")],
          pods: [0, 1, 2, 3].map((i) => pod(i)),
          scale: { decommissioning: "demo-3", moves: [move] },
          topics: [topic("a", [3])],
          moveProbes: new Map<string, MoveProbe>([["a/0", { kind: "state", state }]]),
        }),
      );
      expect(p.start).toEqual([move]);
      expect(p.cancel).toEqual([]);
      expect(p.next?.moves).toEqual([move]);
    }
  });

  it("a failed move is cancelled and planned again", () => {
    const move = {
      topic: "a",
      partition: 0,
      from: "demo-3",
      to: "demo-1",
      startedAt: "x",
      state: "copying" as const,
    };
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), member(3, "Decommissioning")],
        pods: [0, 1, 2, 3].map((i) => pod(i)),
        scale: { decommissioning: "demo-3", moves: [move] },
        topics: [topic("a", [3])],
        moveProbes: new Map([["a/0", { kind: "state", state: "failed", error: "source gone" }]]),
      }),
    );
    expect(p.cancel).toEqual([move]);
    expect(p.events.map((e) => e.reason)).toEqual(["MoveFailed", "MovePlanned"]);
    expect(p.next?.moves?.[0]?.state).toBe("pending");
  });

  it("scaling back up cancels the decommission: moves cancelled, member Active again, moved partitions stay", () => {
    const sim = new Sim(5, [topic("a", [0, 1, 2, 3, 4, 4, 4, 4])]);
    sim.replicas = 4;
    for (let i = 0; i < 4; i++) sim.pass();
    expect(sim.members.find((m) => m.id === "demo-4")?.state).toBe("Decommissioning");
    const inFlight = sim.scale?.moves ?? [];
    expect(inFlight.length).toBeGreaterThan(0);
    const movedSoFar = 4 - (sim.owners().get("demo-4") ?? 0);
    sim.replicas = 5;
    const p = sim.pass();
    expect(p.cancel.map(moveKey).sort()).toEqual(inFlight.map(moveKey).sort());
    expect(p.events.map((e) => e.reason)).toContain("DecommissionCancelled");
    expect(sim.members.find((m) => m.id === "demo-4")?.state).toBe("Active");
    // The cancelled moves stay, aborting, until their destinations confirm.
    expect(sim.scale?.moves?.every((m) => m.aborting?.stalled === false)).toBe(true);
    expect(sim.broker.size).toBe(0);
    sim.pass();
    expect(sim.scale).toBeUndefined();
    expect(4 - (sim.owners().get("demo-4") ?? 0)).toBe(movedSoFar);
    expect(sim.stsReplicas).toBe(5);
  });

  it("cancelling keeps a move whose owner was already swapped (the destination must install it)", () => {
    const mv = (partition: number, state: "ready" | "copying") => ({
      topic: "a",
      partition,
      from: "demo-3",
      to: "demo-1",
      startedAt: "x",
      state,
    });
    const p = planScale(
      input({
        replicas: 4,
        members: [member(0), member(1), member(2), member(3, "Decommissioning")],
        pods: [0, 1, 2, 3].map((i) => pod(i)),
        scale: { decommissioning: "demo-3", moves: [mv(0, "ready"), mv(1, "copying")] },
        topics: [topic("a", [1, 3])],
        moveProbes: new Map<string, MoveProbe>([
          ["a/0", { kind: "state", state: "ready" }],
          ["a/1", { kind: "state", state: "copying" }],
        ]),
      }),
    );
    expect(p.cancel.map((m) => m.partition)).toEqual([1]);
    expect(p.next?.moves?.map((m) => [m.partition, m.aborting === undefined])).toEqual([
      [0, true],
      [1, false],
    ]);
    expect(p.next?.decommissioning).toBeUndefined();
    expect(p.holds.size).toBe(0);
  });

  it("Removed only after the broker refused produce on an earlier pass, with its WAL empty and no moved-away copy held", () => {
    const sim = new Sim(3, [topic("a", [0, 1, 2])]);
    sim.replicas = 2;
    sim.viewLags.add("demo-2");
    sim.heldCopies.set("demo-2", 1);
    for (let i = 0; i < 20; i++) sim.pass();
    expect(sim.owners().get("demo-2")).toBeUndefined();
    expect(sim.members.find((m) => m.id === "demo-2")?.state).toBe("Decommissioning");
    expect(sim.plans.at(-1)?.progress?.message).toMatch(/waiting for its broker to see Decommissioning/);
    expect(sim.scale?.refusingProduceSince).toBeUndefined();

    sim.viewLags.delete("demo-2");
    sim.pass();
    expect(sim.scale?.refusingProduceSince).toBe(new Date(NOW).toISOString());
    expect(sim.plans.at(-1)?.progress?.message).toMatch(/confirming its WAL is empty on the next pass/);
    expect(sim.plans.at(-1)?.holds.get("demo-2")).toBe("Decommissioning");

    for (let i = 0; i < 5; i++) sim.pass();
    expect(sim.plans.at(-1)?.progress?.message).toMatch(/1 moved-away copy\(ies\) kept/);
    expect(sim.members.find((m) => m.id === "demo-2")?.state).toBe("Decommissioning");

    sim.heldCopies.delete("demo-2");
    for (let i = 0; i < 5; i++) sim.pass();
    expect(sim.members.map((m) => m.id)).toEqual(["demo-0", "demo-1"]);
    expect(sim.scale).toBeUndefined();
  });

  // #21 item 1: a stale "0 pending" must never delete a volume with acknowledged records
  it("a member whose broker ran and whose pod is missing is not Removed on its stale WAL count: it waits for the pod", () => {
    const leaving = { ...member(3, "Decommissioning"), address: "127.1.0.4:7942", walPendingRecords: 0 };
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), leaving],
        scale: { decommissioning: "demo-3", refusingProduceSince: new Date(NOW - 5_000).toISOString() },
      }),
    );
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    expect(p.events.map((e) => e.reason)).not.toContain("MemberRemoved");
    expect(p.progress?.message).toMatch(/its pod is missing, waiting for it to come back/);
    // the new broker must be seen refusing produce again before its WAL counts
    expect(p.next?.refusingProduceSince).toBeUndefined();
  });

  it("the recreated pod goes through the whole removal gate: refusing produce, then WAL empty on a later pass", () => {
    const leaving = { ...member(3, "Decommissioning"), address: "127.1.0.4:7942", walPendingRecords: 0 };
    const base = {
      replicas: 3,
      members: [member(0), member(1), member(2), leaving],
      pods: [0, 1, 2, 3].map((i) => pod(i, i === 3 ? { ready: false } : {})),
    };
    const refusing = (pendingRecords: number) => ({
      reachable: true as const,
      pendingRecords,
      ownedPartitions: 0,
      refusingProduce: true,
      movedAwayCopies: 0,
    });
    // the new broker does not answer yet
    let p = planScale(
      input({
        ...base,
        scale: { decommissioning: "demo-3" },
        decommissionProbe: { reachable: false, error: "ECONNREFUSED" },
      }),
    );
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    // it answers with its WAL replayed: 12 pending; first sighting of the refusal
    p = planScale(input({ ...base, scale: { decommissioning: "demo-3" }, decommissionProbe: refusing(12) }));
    expect(p.next?.refusingProduceSince).toBeDefined();
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    p = planScale(input({ ...base, scale: p.next, decommissionProbe: refusing(12) }));
    expect(p.progress?.message).toMatch(/12 record\(s\) pending/);
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    p = planScale(input({ ...base, scale: p.next, decommissionProbe: refusing(0) }));
    expect(p.holds.get("demo-3")).toBe("Removed");
  });

  it("a terminating pod is no confirmation either", () => {
    const leaving = { ...member(3, "Decommissioning"), address: "127.1.0.4:7942", walPendingRecords: 0 };
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), leaving],
        pods: [0, 1, 2, 3].map((i) => pod(i, i === 3 ? { terminating: true, ready: false } : {})),
        scale: { decommissioning: "demo-3", refusingProduceSince: new Date(NOW - 5_000).toISOString() },
        decommissionProbe: undefined,
      }),
    );
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    expect(p.progress?.message).toMatch(/terminating/);
  });

  it("a member that never got a pod is removed without moves", () => {
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), member(3, "Decommissioning")],
        scale: { decommissioning: "demo-3" },
      }),
    );
    expect(p.holds.get("demo-3")).toBe("Removed");
  });
});

describe("planScale: replicated topics", () => {
  /** A replicated record: leader first, every replica in sync. */
  const rec = (partition: number, replicas: number[]): PartitionAssignment => ({
    partition,
    owner: `demo-${replicas[0]}`,
    leader: `demo-${replicas[0]}`,
    replicas: replicas.map((r) => `demo-${r}`),
    isr: replicas.map((r) => ({ member: `demo-${r}`, volumeId: `v${r}` })),
    leaderEpoch: 0,
  });
  const replicated = (assignments: PartitionAssignment[]): ScaleTopic => ({
    name: "r",
    assignments,
    replicationFactor: 3,
  });

  it("moves no replicated partition by copy; the removal gate waits until no record lists the member", () => {
    const leaving = { ...member(3, "Decommissioning"), address: "127.1.0.4:7942" };
    const base = {
      replicas: 3,
      members: [member(0), member(1), member(2), leaving],
      pods: [0, 1, 2, 3].map((i) => pod(i)),
      decommissionProbe: {
        reachable: true as const,
        pendingRecords: 0,
        ownedPartitions: 0,
        refusingProduce: true,
        movedAwayCopies: 0,
      },
    };
    // demo-3 leads partition 0 and follows in 1; plus a single-copy topic it owns nothing of.
    const topics = [replicated([rec(0, [3, 0, 1]), rec(1, [0, 3, 2])]), topic("a", [0, 1, 2])];
    let p = planScale(input({ ...base, topics, scale: { decommissioning: "demo-3" } }));
    expect(p.start).toEqual([]);
    expect(p.next?.moves ?? []).toEqual([]);
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
    expect(p.progress?.message).toBe(
      "decommissioning demo-3: 2 replicated partition(s) still list it (1 led by it), waiting for their replacement replicas to be in sync (r/0, r/1)",
    );
    // Reassigned (the topic reconcile's work): no record names it any more.
    const done = [replicated([rec(0, [0, 1, 2]), rec(1, [0, 1, 2])]), topic("a", [0, 1, 2])];
    p = planScale(input({ ...base, topics: done, scale: { decommissioning: "demo-3" } }));
    expect(p.next?.refusingProduceSince).toBeDefined();
    p = planScale(input({ ...base, topics: done, scale: p.next }));
    expect(p.holds.get("demo-3")).toBe("Removed");
  });

  it("a Down member holding only replicas may be decommissioned (others hold its data)", () => {
    const p = planScale(
      input({
        replicas: 3,
        members: [member(0), member(1), member(2), member(3, "Down")],
        pods: [0, 1, 2].map((i) => pod(i)),
        topics: [replicated([rec(0, [1, 3, 0])])],
      }),
    );
    expect(p.blocked).toBeUndefined();
    expect(p.next?.decommissioning).toBe("demo-3");
  });

  it("refuses a scale-down below a topic's replication factor", () => {
    const p = planScale(input({ replicas: 2, topics: [replicated([rec(0, [0, 1, 2])])] }));
    expect(p.blocked).toBe(
      "scale-down to 2 refused: topic(s) r (replication factor 3) need 3 brokers, 2 would remain; keeping 3 broker(s)",
    );
    expect(p.holds.size).toBe(0);
  });

  it("a rebalance moves single-copy partitions only", () => {
    const topics = [replicated([0, 1, 2, 3].map((pt) => rec(pt, [0, 1, 2]))), topic("a", [0, 0, 0, 0, 1])];
    const p = planScale(input({ replicas: 3, topics, rebalance: true }));
    expect(p.next?.moves?.map((m) => m.topic)).toEqual(["a", "a"]);
  });
});

describe("planScale: rebalance", () => {
  it("off by default: new members get nothing moved", () => {
    const sim = new Sim(5, [topic("a", [0, 1, 2, 0, 1, 2])]);
    for (let i = 0; i < 5; i++) sim.pass();
    expect(sim.owners().get("demo-3")).toBeUndefined();
    expect(sim.plans.every((p) => p.start.length === 0)).toBe(true);
  });

  it("spec.rebalance moves partitions from the most loaded onto the new members until counts differ by at most one", () => {
    const sim = new Sim(5, [topic("a", [0, 1, 2, 0, 1, 2]), topic("b", [0, 1, 2, 0, 1, 2])]);
    sim.rebalance = true;
    for (let i = 0; i < 40; i++) sim.pass();
    const counts = [...sim.owners().values()];
    expect(counts.reduce((a, b) => a + b, 0)).toBe(12);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    expect(sim.owners().size).toBe(5);
    expect(sim.events.some((e) => e.startsWith("Rebalanced"))).toBe(true);
    expect(sim.scale).toBeUndefined();
    expect(sim.concurrent).toBeLessThanOrEqual(2);
  });

  it("a one-shot annotation rebalances once and records it", () => {
    const topics = [topic("a", [0, 0, 0, 0, 1])];
    let scale: ScaleStatus | undefined;
    const p = planScale(input({ replicas: 3, topics, rebalanceRequest: "t1", scale }));
    expect(p.next?.moves?.length).toBe(2);
    scale = { moves: [], movesDone: 2 };
    topics[0] = topic("a", [2, 1, 0, 0, 1]);
    const q = planScale(input({ replicas: 3, topics, rebalanceRequest: "t1", scale }));
    expect(q.next).toEqual({ movesDone: 0, rebalanceHandled: "t1" });
    const r = planScale(
      input({ replicas: 3, topics: [topic("a", [0, 0, 0, 0, 0])], rebalanceRequest: "t1", scale: q.next }),
    );
    expect(r.next?.moves).toBeUndefined();
  });

  it("waits while a member is not Active or a roll runs", () => {
    const p = planScale(
      input({
        replicas: 4,
        members: [member(0), member(1), member(2), member(3, "Joining")],
        pods: [0, 1, 2, 3].map((i) => pod(i, i === 3 ? { ready: false } : {})),
        topics: [topic("a", [0, 1, 2, 0, 1, 2])],
        rebalance: true,
      }),
    );
    expect(p.next).toBeUndefined();
    expect(p.progress?.reason).toBe("ScalingUp");
    const q = planScale(input({ topics: [topic("a", [0, 0, 0, 0])], rebalance: true, rollBusy: "roll" }));
    expect(q.next).toBeUndefined();
    expect(q.progress?.reason).toBe("Rebalancing");
  });
});
