import { describe, expect, it } from "vitest";
import type { MemberStatus, RollStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import type { PodView } from "./pods.ts";
import {
  type BrokerProbe,
  maintenanceHolds,
  nextRollStatus,
  planDrainCancel,
  planRoll,
  type RollAction,
  type RollInput,
  rollForPodInFlight,
  rollOrder,
} from "./roll.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const OLD = "demo-old";
const NEW = "demo-new";

function pod(ordinal: number, over: Partial<PodView> = {}): PodView {
  return {
    name: `demo-${ordinal}`,
    ordinal,
    uid: `uid-${ordinal}`,
    podIP: `127.1.0.${ordinal + 1}`,
    ready: true,
    notReadySinceMs: undefined,
    terminating: false,
    revision: OLD,
    ...over,
  };
}

function member(ordinal: number, state: MemberStatus["state"] = "Active"): MemberStatus {
  return { id: `demo-${ordinal}`, pod: `demo-${ordinal}`, ordinal, state, since: "2026-11-29T11:00:00Z" };
}

function roll(pod: string, startedMsAgo = 1_000, over: Partial<RollStatus> = {}): RollStatus {
  return {
    podInFlight: pod,
    startedAt: new Date(NOW - startedMsAgo).toISOString(),
    reason: "test",
    podReadyAtStart: true,
    ...over,
  };
}

const drained: BrokerProbe = { reachable: true, draining: true, pendingRecords: 0 };
const pending = (n: number): BrokerProbe => ({ reachable: true, draining: true, pendingRecords: n });
const serving: BrokerProbe = { reachable: true, draining: false, pendingRecords: 3 };
const unreachable: BrokerProbe = { reachable: false, error: "connect ECONNREFUSED" };

function input(over: Partial<RollInput>): RollInput {
  return {
    nowMs: NOW,
    replicas: 3,
    updateRevision: NEW,
    pods: [pod(0), pod(1), pod(2)],
    members: [member(0), member(1), member(2)],
    roll: undefined,
    paused: false,
    force: false,
    drainTimeoutMs: 60_000,
    gateTimeoutMs: 60_000,
    inFlightBroker: undefined,
    ...over,
  };
}

type Want = Partial<RollAction> & { kind: RollAction["kind"] };

const cases: Array<{ name: string; in: Partial<RollInput>; want: Want; reason?: RegExp }> = [
  // --- nothing to do
  {
    name: "no update revision yet",
    in: { updateRevision: undefined },
    want: { kind: "none" },
  },
  {
    name: "every pod at the update revision",
    in: { pods: [pod(0, { revision: NEW }), pod(1, { revision: NEW }), pod(2, { revision: NEW })] },
    want: { kind: "none" },
    reason: /every pod runs revision demo-new/,
  },
  // --- starting a roll: gates and order
  {
    name: "starts with the highest ordinal when all are Ready and Active",
    in: {},
    want: { kind: "enterMaintenance", pod: "demo-2" },
  },
  {
    name: "paused: waits, deletes nothing",
    in: { paused: true },
    want: { kind: "wait", code: "Paused" },
  },
  {
    name: "an unready outdated pod goes first (it serves nothing)",
    in: {
      pods: [pod(0), pod(1, { ready: false }), pod(2)],
      members: [member(0), member(1, "Down"), member(2)],
    },
    want: { kind: "enterMaintenance", pod: "demo-1" },
  },
  {
    name: "two pods not Ready: no restart starts (conservative: wait for a human or for them to recover)",
    in: {
      pods: [pod(0, { ready: false }), pod(1, { ready: false }), pod(2)],
      members: [member(0, "Down"), member(1, "Down"), member(2)],
    },
    want: { kind: "wait", code: "PodsNotReady" },
    reason: /demo-0 not Ready/,
  },
  {
    name: "Redpanda #1540: a pod at the new revision not Ready blocks the next pod",
    in: { pods: [pod(0), pod(1), pod(2, { revision: NEW, ready: false })] },
    want: { kind: "wait", code: "PodsNotReady" },
    reason: /demo-2 not Ready \(at the new revision\)/,
  },
  {
    name: "a Ready pod whose member is not Active yet blocks",
    in: {
      pods: [pod(0), pod(1), pod(2, { revision: NEW })],
      members: [member(0), member(1), member(2, "Joining")],
    },
    want: { kind: "wait", code: "MemberNotActive" },
    reason: /demo-2=Joining/,
  },
  {
    name: "a missing pod blocks",
    in: { pods: [pod(0), pod(1)] },
    want: { kind: "wait", code: "PodsNotReady" },
    reason: /demo-2 missing/,
  },
  {
    name: "a terminating pod blocks",
    in: { pods: [pod(0), pod(1), pod(2, { terminating: true, ready: false })] },
    want: { kind: "wait", code: "PodsNotReady" },
    reason: /demo-2 terminating/,
  },
  {
    name: "a decommission running blocks",
    in: { members: [member(0), member(1), member(2, "Decommissioning")] },
    want: { kind: "wait", code: "Decommissioning" },
  },
  {
    name: "continues with the next outdated pod once the first is done",
    in: { pods: [pod(0), pod(1), pod(2, { revision: NEW })] },
    want: { kind: "enterMaintenance", pod: "demo-1" },
  },
  // --- the pod in flight
  {
    name: "in Maintenance, broker still serving: ask it to drain",
    in: {
      roll: roll("demo-2"),
      members: [member(0), member(1), member(2, "Maintenance")],
      inFlightBroker: serving,
    },
    want: { kind: "drain", pod: "demo-2" },
  },
  {
    name: "draining with records pending, within the timeout: wait",
    in: {
      roll: roll("demo-2"),
      inFlightBroker: pending(12),
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "wait", code: "Draining", pod: "demo-2" },
    reason: /12 WAL record/,
  },
  {
    name: "drained and every other pod Ready/Active: delete it (its own unreadiness is the drain's)",
    in: {
      roll: roll("demo-2"),
      inFlightBroker: drained,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
      members: [member(0), member(1), member(2, "Maintenance")],
    },
    want: { kind: "deletePod", pod: "demo-2", uid: "uid-2", forced: false, soleBroker: false },
  },
  {
    name: "drained but its pod still Ready (the probe has not seen the drain yet): wait, so Services stop routing to it first",
    in: { roll: roll("demo-2"), inFlightBroker: drained, pods: [pod(0), pod(1), pod(2)] },
    want: { kind: "wait", code: "Draining", pod: "demo-2" },
    reason: /turn not Ready so Services stop routing/,
  },
  {
    name: "drained, pod still Ready past drainTimeoutSeconds: delete anyway (a readiness probe that never fails does not hold the roll)",
    in: { roll: roll("demo-2", 61_000), inFlightBroker: drained, pods: [pod(0), pod(1), pod(2)] },
    want: { kind: "deletePod", pod: "demo-2", forced: false },
  },
  {
    name: "drained but another pod went unready meanwhile: wait, never a second disruption",
    in: { roll: roll("demo-2"), inFlightBroker: drained, pods: [pod(0, { ready: false }), pod(1), pod(2)] },
    want: { kind: "wait", code: "PodsNotReady", pod: "demo-2" },
  },
  {
    name: "drain not finished past drainTimeoutSeconds: stuck, with the pending count",
    in: { roll: roll("demo-2", 61_000), inFlightBroker: pending(7) },
    want: { kind: "stuck", pod: "demo-2", pendingRecords: 7 },
    reason: /after 61s: 7 WAL record\(s\) pending/,
  },
  {
    name: "stuck, but force: delete anyway",
    in: { roll: roll("demo-2", 61_000), inFlightBroker: pending(7), force: true },
    want: { kind: "deletePod", pod: "demo-2", forced: true },
  },
  {
    name: "force does not skip the other gates",
    in: {
      roll: roll("demo-2", 61_000),
      inFlightBroker: pending(7),
      force: true,
      pods: [pod(0, { ready: false }), pod(1), pod(2)],
    },
    want: { kind: "wait", code: "PodsNotReady" },
  },
  {
    name: "a Ready pod whose broker does not answer: wait",
    in: { roll: roll("demo-2"), inFlightBroker: unreachable },
    want: { kind: "wait", code: "BrokerUnreachable" },
  },
  {
    name: "a Ready pod whose broker does not answer past the timeout: stuck",
    in: { roll: roll("demo-2", 61_000), inFlightBroker: unreachable },
    want: { kind: "stuck", pod: "demo-2", pendingRecords: undefined },
  },
  {
    name: "a pod not Ready when the roll named it, whose broker does not answer: delete (what a crash would do)",
    in: {
      roll: roll("demo-2", 1_000, { podReadyAtStart: false }),
      inFlightBroker: unreachable,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "deletePod", pod: "demo-2", forced: false },
    reason: /WAL stays on its volume/,
  },
  // #21 item 2: a draining broker reports not Ready by design; one failed probe is no confirmed drain
  {
    name: "a pod Ready when the roll named it, now not Ready (draining) and one probe fails: wait, no delete",
    in: {
      roll: roll("demo-2"),
      inFlightBroker: unreachable,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "wait", code: "BrokerUnreachable", pod: "demo-2" },
    reason: /confirm its drain/,
  },
  {
    name: "an older status.roll without podReadyAtStart counts as Ready at start: wait, no delete",
    in: {
      roll: { podInFlight: "demo-2", startedAt: new Date(NOW - 1_000).toISOString(), reason: "test" },
      inFlightBroker: unreachable,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "wait", code: "BrokerUnreachable" },
  },
  {
    name: "the crash path keeps the gate: another pod not Ready → wait, no delete",
    in: {
      roll: roll("demo-2", 1_000, { podReadyAtStart: false }),
      inFlightBroker: unreachable,
      pods: [pod(0), pod(1, { ready: false }), pod(2, { ready: false })],
    },
    want: { kind: "wait", code: "PodsNotReady", pod: "demo-2", gateBlocked: true },
  },
  // #21 item 3: the drain is gated, and a blocked gate is bounded
  {
    name: "does not drain while another pod is not Ready",
    in: {
      roll: roll("demo-2"),
      inFlightBroker: serving,
      pods: [pod(0), pod(1, { ready: false }), pod(2)],
    },
    want: { kind: "wait", code: "PodsNotReady", pod: "demo-2", gateBlocked: true },
  },
  {
    name: "draining, another pod fails: wait within the bound",
    in: {
      roll: roll("demo-2", 30_000, { gateBlockedSince: new Date(NOW - 59_000).toISOString() }),
      inFlightBroker: pending(5),
      pods: [pod(0), pod(1, { ready: false }), pod(2, { ready: false })],
    },
    want: { kind: "wait", code: "PodsNotReady", gateBlocked: true },
  },
  {
    name: "draining, another pod failed past the bound: abort and cancel the drain",
    in: {
      roll: roll("demo-2", 90_000, { gateBlockedSince: new Date(NOW - 60_000).toISOString() }),
      inFlightBroker: drained,
      pods: [pod(0), pod(1, { ready: false }), pod(2, { ready: false })],
    },
    want: { kind: "abort", pod: "demo-2", cancelDrain: true },
    reason: /abandoned after 60s.*demo-1 not Ready.*gateTimeoutSeconds 60/,
  },
  {
    name: "deleted, not yet observed gone: wait",
    in: { roll: roll("demo-2"), pods: [pod(0), pod(1), pod(2, { terminating: true, ready: false })] },
    want: { kind: "wait", code: "PodReplacing" },
  },
  {
    name: "gone: wait for the StatefulSet controller to recreate it",
    in: { roll: roll("demo-2"), pods: [pod(0), pod(1)] },
    want: { kind: "wait", code: "PodReplacing" },
  },
  {
    name: "Redpanda #1540: replacement at the new revision not Ready: wait, never another deletion",
    in: {
      roll: roll("demo-2"),
      pods: [pod(0), pod(1), pod(2, { revision: NEW, ready: false, uid: "uid-2b" })],
      inFlightBroker: { reachable: true, draining: false, pendingRecords: 40 },
    },
    want: { kind: "wait", code: "NewPodNotReady", pod: "demo-2" },
  },
  {
    name: "replacement Ready at the new revision: finish",
    in: { roll: roll("demo-2"), pods: [pod(0), pod(1), pod(2, { revision: NEW, uid: "uid-2b" })] },
    want: { kind: "finish", pod: "demo-2", revision: NEW },
  },
  {
    name: "spec reverted while draining (pod at the update revision, broker draining): cancel the drain",
    in: {
      roll: roll("demo-2"),
      updateRevision: OLD,
      inFlightBroker: drained,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "cancelDrain", pod: "demo-2" },
  },
  {
    name: "paused mid-roll: the restart already started still finishes",
    in: {
      roll: roll("demo-2"),
      paused: true,
      inFlightBroker: drained,
      pods: [pod(0), pod(1), pod(2, { ready: false })],
    },
    want: { kind: "deletePod", pod: "demo-2" },
  },
];

describe("planRoll", () => {
  for (const c of cases) {
    it(c.name, () => {
      const got = planRoll(input(c.in));
      expect(got).toMatchObject(c.want);
      if (c.reason !== undefined) expect("reason" in got ? got.reason : "").toMatch(c.reason);
    });
  }

  it("status.roll: records whether the pod was Ready, starts the gate clock once, drops it when clear", () => {
    const start = nextRollStatus(
      undefined,
      { kind: "enterMaintenance", pod: "demo-2", reason: "r", podReady: false, soleBroker: false },
      NOW,
    );
    expect(start).toMatchObject({ podInFlight: "demo-2", podReadyAtStart: false });
    const gateWait: RollAction = { kind: "wait", code: "PodsNotReady", reason: "x", gateBlocked: true };
    const blocked = nextRollStatus(start, gateWait, NOW + 1_000);
    expect(blocked?.gateBlockedSince).toBe(new Date(NOW + 1_000).toISOString());
    expect(nextRollStatus(blocked, gateWait, NOW + 9_000)?.gateBlockedSince).toBe(blocked?.gateBlockedSince);
    const clear = nextRollStatus(blocked, { kind: "drain", pod: "demo-2" }, NOW + 10_000);
    expect(clear).toEqual(start);
    expect(
      nextRollStatus(blocked, { kind: "abort", pod: "demo-2", reason: "x", cancelDrain: true }, NOW),
    ).toBe(undefined);
  });

  it("a whole roll, pass by pass, deletes one pod at a time, highest ordinal first", () => {
    let pods = [pod(0), pod(1), pod(2)];
    let members = [member(0), member(1), member(2)];
    let current: RollStatus | undefined;
    let draining = false;
    let now = NOW;
    const deleted: string[] = [];
    for (let pass = 0; pass < 40; pass++) {
      now += 1000;
      const inFlight = current?.podInFlight;
      const probe: BrokerProbe | undefined =
        inFlight === undefined ? undefined : { reachable: true, draining, pendingRecords: 0 };
      const a = planRoll(input({ nowMs: now, pods, members, roll: current, inFlightBroker: probe }));
      if (a.kind === "enterMaintenance") {
        current = { podInFlight: a.pod, startedAt: new Date(now).toISOString(), reason: a.reason };
        members = members.map((m) => (m.id === a.pod ? { ...m, state: "Maintenance" } : m));
      } else if (a.kind === "drain") {
        draining = true;
        // The drained broker fails its readiness probe.
        pods = pods.map((p) => (p.name === a.pod ? { ...p, ready: false } : p));
      } else if (a.kind === "deletePod") {
        expect(pods.filter((p) => p.name !== a.pod).every((p) => p.ready)).toBe(true);
        deleted.push(a.pod);
        const o = Number(a.pod.slice(5));
        pods = pods.map((p) => (p.name === a.pod ? pod(o, { revision: NEW, uid: `new-${o}` }) : p));
        draining = false;
      } else if (a.kind === "finish") {
        current = undefined;
        members = members.map((m) => (m.id === a.pod ? { ...m, state: "Active" } : m));
      } else if (a.kind === "none") break;
      else throw new Error(`unexpected ${JSON.stringify(a)}`);
    }
    expect(deleted).toEqual(["demo-2", "demo-1", "demo-0"]);
    expect(pods.every((p) => p.revision === NEW)).toBe(true);
  });
});

describe("a 1-broker cluster: the restart is accepted downtime, drained first, never a hang", () => {
  const one = (over: Partial<RollInput>): RollInput =>
    input({ replicas: 1, pods: [pod(0)], members: [member(0)], ...over });

  it("starts with nothing else to wait for, and says the cluster will be unavailable", () => {
    const a = planRoll(one({}));
    expect(a).toMatchObject({ kind: "enterMaintenance", pod: "demo-0", soleBroker: true, podReady: true });
    expect("reason" in a ? a.reason : "").toMatch(/only broker.*unavailable until its replacement is Ready/);
  });

  it("waits while its WAL still holds records, however long the drain takes before the timeout", () => {
    const inFlight = { roll: roll("demo-0", 59_000), members: [member(0, "Maintenance")] };
    const a = planRoll(one({ ...inFlight, inFlightBroker: pending(12), pods: [pod(0, { ready: false })] }));
    expect(a).toMatchObject({ kind: "wait", code: "Draining", pod: "demo-0" });
    // Past drainTimeoutSeconds a pending WAL is stuck (a reason, no deletion), as for any size.
    const late = planRoll(
      one({
        ...inFlight,
        roll: roll("demo-0", 61_000),
        inFlightBroker: pending(12),
        pods: [pod(0, { ready: false })],
      }),
    );
    expect(late).toMatchObject({ kind: "stuck", pod: "demo-0", pendingRecords: 12 });
  });

  it("deletes it once drained and not Ready (the state the budget used to refuse)", () => {
    const a = planRoll(
      one({
        roll: roll("demo-0"),
        members: [member(0, "Maintenance")],
        inFlightBroker: drained,
        pods: [pod(0, { ready: false })],
      }),
    );
    expect(a).toMatchObject({
      kind: "deletePod",
      pod: "demo-0",
      uid: "uid-0",
      forced: false,
      soleBroker: true,
    });
  });

  it("is not a sole broker while a member above spec.replicas still serves (a scale-down to 1 in flight)", () => {
    const a = planRoll(
      input({ replicas: 1, pods: [pod(0), pod(1, { revision: NEW })], members: [member(0), member(1)] }),
    );
    expect(a).toMatchObject({ kind: "enterMaintenance", pod: "demo-0", soleBroker: false });
  });

  it("a whole roll, pass by pass: drain, WAL dispatched, delete, replacement Ready, done", () => {
    let pods = [pod(0)];
    let members = [member(0)];
    let current: RollStatus | undefined;
    let draining = false;
    let walPending = 0;
    let now = NOW;
    const seen: string[] = [];
    for (let pass = 0; pass < 30; pass++) {
      now += 1000;
      const probe: BrokerProbe | undefined =
        current === undefined ? undefined : { reachable: true, draining, pendingRecords: walPending };
      const a = planRoll(one({ nowMs: now, pods, members, roll: current, inFlightBroker: probe }));
      seen.push(a.kind);
      if (a.kind === "enterMaintenance") {
        current = nextRollStatus(current, a, now);
        members = [{ ...members[0]!, state: "Maintenance" }];
      } else if (a.kind === "drain") {
        draining = true;
        walPending = 3; // the dispatcher needs a few passes
        pods = [{ ...pods[0]!, ready: false }];
      } else if (a.kind === "wait") {
        expect(a.code).toMatch(/Draining|NewPodNotReady/);
        if (walPending > 0) walPending--;
        else if (!pods[0]!.ready) pods = [{ ...pods[0]!, ready: true }];
      } else if (a.kind === "deletePod") {
        expect(walPending).toBe(0);
        expect(a.soleBroker).toBe(true);
        pods = [pod(0, { revision: NEW, uid: "new-0", ready: false })];
        draining = false;
      } else if (a.kind === "finish") {
        current = nextRollStatus(current, a, now);
        members = [member(0)];
      } else if (a.kind === "none") break;
      else throw new Error(`unexpected ${JSON.stringify(a)}`);
    }
    expect(seen.filter((k) => k === "deletePod")).toHaveLength(1);
    expect(seen.at(-1)).toBe("none");
    expect(pods).toMatchObject([{ revision: NEW, ready: true }]);
    expect(current).toBeUndefined();
  });
});

describe("rollOrder and maintenanceHolds", () => {
  it("orders not Ready first, then highest ordinal", () => {
    const order = rollOrder([pod(0), pod(1, { ready: false }), pod(2), pod(3, { ready: false })]);
    expect(order.map((p) => p.name)).toEqual(["demo-3", "demo-1", "demo-2", "demo-0"]);
  });
  it("holds the pod in flight until its replacement is Ready at the new revision", () => {
    const r = roll("demo-2");
    expect(maintenanceHolds(undefined, [pod(2)], NEW)).toEqual(new Set());
    expect(maintenanceHolds(r, [pod(2)], NEW)).toEqual(new Set(["demo-2"]));
    expect(maintenanceHolds(r, [], NEW)).toEqual(new Set(["demo-2"]));
    expect(maintenanceHolds(r, [pod(2, { revision: NEW, ready: false })], NEW)).toEqual(new Set(["demo-2"]));
    expect(maintenanceHolds(r, [pod(2, { revision: NEW })], NEW)).toEqual(new Set());
  });
});

describe("rollForPodInFlight (review-op)", () => {
  it("names afresh an outdated pod in flight that replaced the one the roll named", () => {
    const r = roll("demo-2", 600_000, {
      podUid: "uid-2",
      gateBlockedSince: new Date(NOW - 5_000).toISOString(),
    });
    const replaced = pod(2, { uid: "uid-2b", ready: false, revision: "demo-mid" });
    const next = rollForPodInFlight(r, [pod(0), pod(1), replaced], NEW, NOW);
    expect(next).toEqual({
      podInFlight: "demo-2",
      reason: "test",
      podUid: "uid-2b",
      podReadyAtStart: false,
      startedAt: new Date(NOW).toISOString(),
    });
    // Named afresh and not Ready, its broker away: restarted without a drain.
    const a = planRoll(input({ pods: [pod(0), pod(1), replaced], roll: next, inFlightBroker: unreachable }));
    expect(a.kind).toBe("deletePod");
  });

  it("leaves the roll alone for the named pod, a replacement at the update revision, or no recorded uid", () => {
    const r = roll("demo-2", 1_000, { podUid: "uid-2" });
    expect(rollForPodInFlight(r, [pod(2)], NEW, NOW)).toBe(r);
    expect(rollForPodInFlight(r, [pod(2, { uid: "x", revision: NEW })], NEW, NOW)).toBe(r);
    const old = roll("demo-2");
    expect(rollForPodInFlight(old, [pod(2, { uid: "x" })], NEW, NOW)).toBe(old);
  });
});

describe("planDrainCancel: a drain cancel owed since an abandoned restart", () => {
  const owed = { pod: "demo-2", since: "2026-11-29T12:00:00Z", attempts: 1 };
  const p2 = {
    name: "demo-2",
    ordinal: 2,
    uid: "u2",
    podIP: "10.0.0.3",
    ready: false,
    notReadySinceMs: undefined,
    terminating: false,
    revision: "r1",
  };
  it("retries while the broker drains or does not answer, clears once it accepts produce", () => {
    expect(planDrainCancel(undefined, undefined, p2, undefined)).toEqual({ kind: "none" });
    expect(planDrainCancel(owed, undefined, p2, { reachable: false, error: "timeout" })).toEqual({
      kind: "retry",
      pod: "demo-2",
      attempt: 2,
    });
    expect(
      planDrainCancel(owed, undefined, p2, { reachable: true, draining: true, pendingRecords: 3 }).kind,
    ).toBe("retry");
    expect(
      planDrainCancel(owed, undefined, p2, { reachable: true, draining: false, pendingRecords: 0 }).kind,
    ).toBe("clear");
  });
  it("waits for a missing or terminating pod; a new restart of the pod takes it over", () => {
    expect(planDrainCancel(owed, undefined, undefined, undefined).kind).toBe("wait");
    expect(planDrainCancel(owed, undefined, { ...p2, terminating: true }, undefined).kind).toBe("wait");
    const roll = { podInFlight: "demo-2", startedAt: "x", reason: "r" };
    expect(planDrainCancel(owed, roll, p2, undefined).kind).toBe("clear");
  });
});

// Found by the operator-loop simulation (sim/operator-loop, seed 2): a member
// just decommissioned (Removed, its ordinal above spec.replicas) still had its
// outdated, not Ready pod in the cache for one pass; the roll named it first
// (not Ready pods go first), the StatefulSet then shrank past it, and the roll
// waited forever for a pod that is never recreated while every other pod
// stayed outdated.
describe("planRoll: pods the spec no longer wants", () => {
  it("never names a pod at an ordinal at or above spec.replicas", () => {
    const a = planRoll(
      input({
        replicas: 3,
        pods: [pod(0), pod(1), pod(2), pod(3, { ready: false })],
        members: [member(0), member(1), member(2), member(3, "Removed")],
      }),
    );
    expect(a).toMatchObject({ kind: "enterMaintenance", pod: "demo-2" });
  });
  it("drops a restart in flight whose pod the spec shrank past", () => {
    const members = [member(0), member(1), member(2), member(3, "Removed")];
    const gone = planRoll(
      input({ replicas: 3, members, pods: [pod(0), pod(1), pod(2)], roll: roll("demo-3") }),
    );
    expect(gone).toMatchObject({ kind: "abort", pod: "demo-3", cancelDrain: false });
    expect(gone.kind === "abort" && gone.reason).toMatch(/leaving the cluster \(spec.replicas 3\)/);
    const present = planRoll(
      input({ replicas: 3, members, pods: [pod(0), pod(1), pod(2), pod(3)], roll: roll("demo-3") }),
    );
    expect(present).toMatchObject({ kind: "abort", pod: "demo-3", cancelDrain: true });
  });
});

// Found by the operator-loop simulation (sim/operator-loop, seeds 149 and
// 150): spec.replicas dropped from 4 (or 5) to 2 while a roll ran. The scale-
// down waits for the roll, so demo-2 and demo-3 kept serving (and owning
// partitions), but the gate looked only at ordinals below spec.replicas. A
// node fault turned demo-2 not Ready; the roll drained demo-0 anyway, the
// PodDisruptionBudget (which counts every pod of the StatefulSet) refused the
// eviction, and demo-0 stayed drained next to the outage for 73 s with no
// gate clock running (gate timeout 20 s).
describe("planRoll: brokers above spec.replicas still in the cluster", () => {
  const fourPods = (over: Partial<PodView> = {}) => [pod(0), pod(1), pod(2, over), pod(3)];
  const fourMembers = [member(0), member(1), member(2), member(3)];

  it("starts no restart while a broker above spec.replicas, not yet decommissioned, is not Ready", () => {
    const a = planRoll(
      input({
        replicas: 2,
        pods: fourPods({ ready: false, readyVerdictFromNode: true }),
        members: fourMembers,
      }),
    );
    expect(a).toMatchObject({ kind: "wait", code: "PodsNotReady" });
    expect(a.kind === "wait" && a.reason).toMatch(/demo-2 not Ready/);
  });

  it("gates the pod in flight on them: waits with the gate clock running, then abandons and cancels the drain", () => {
    const waiting = planRoll(
      input({
        replicas: 2,
        pods: fourPods({ ready: false }),
        members: [member(0, "Maintenance"), member(1), member(2), member(3)],
        roll: roll("demo-0"),
        inFlightBroker: drained,
      }),
    );
    expect(waiting).toMatchObject({ kind: "wait", code: "PodsNotReady", pod: "demo-0", gateBlocked: true });
    const late = planRoll(
      input({
        replicas: 2,
        pods: fourPods({ ready: false }),
        members: [member(0, "Maintenance"), member(1), member(2), member(3)],
        roll: roll("demo-0", 30_000, { gateBlockedSince: new Date(NOW - 25_000).toISOString() }),
        inFlightBroker: drained,
        gateTimeoutMs: 20_000,
      }),
    );
    expect(late).toMatchObject({ kind: "abort", pod: "demo-0", cancelDrain: true });
  });

  it("counts a member above spec.replicas that is Down, or whose pod is missing", () => {
    const down = planRoll(
      input({
        replicas: 2,
        pods: [pod(0), pod(1), pod(2, { ready: false })],
        members: [member(0), member(1), member(2, "Down")],
      }),
    );
    expect(down).toMatchObject({ kind: "wait", code: "PodsNotReady" });
    const missing = planRoll(
      input({ replicas: 2, pods: [pod(0), pod(1)], members: [member(0), member(1), member(2)] }),
    );
    expect(missing).toMatchObject({ kind: "wait", code: "PodsNotReady" });
    expect(missing.kind === "wait" && missing.reason).toMatch(/demo-2 missing/);
  });

  it("a live pod above spec.replicas that no member names yet counts too; a Removed member's pod does not", () => {
    const unnamed = planRoll(
      input({ replicas: 2, pods: fourPods({ ready: false }), members: [member(0), member(1)] }),
    );
    expect(unnamed).toMatchObject({ kind: "wait", code: "PodsNotReady" });
    const removed = planRoll(
      input({
        replicas: 2,
        pods: [pod(0), pod(1), pod(2, { ready: false })],
        members: [member(0), member(1), member(2, "Removed")],
      }),
    );
    expect(removed).toMatchObject({ kind: "enterMaintenance", pod: "demo-1" });
  });

  it("with them all Ready and Active, the roll goes on below spec.replicas only", () => {
    const a = planRoll(input({ replicas: 2, pods: fourPods(), members: fourMembers }));
    expect(a).toMatchObject({ kind: "enterMaintenance", pod: "demo-1" });
  });
});

describe("planRoll: leadership handoff before the drain", () => {
  const maint = [member(0), member(1), member(2, "Maintenance")];
  const led = (...entries: Array<[string, boolean]>) => ({
    leadership: { led: entries.map(([key, movable]) => ({ key, movable })) },
    handoffTimeoutMs: 30_000,
  });

  it("waits while the pod in flight leads a partition another in-sync replica could take", () => {
    const a = planRoll(
      input({
        roll: roll("demo-2"),
        members: maint,
        inFlightBroker: serving,
        ...led(["orders/0", true], ["orders/2", false]),
      }),
    );
    expect(a).toMatchObject({ kind: "wait", code: "HandingOffLeadership", pod: "demo-2" });
    expect(a.kind === "wait" && a.reason).toContain("orders/0");
    // The wait is not the gate's: no gate clock, status.roll unchanged.
    expect(nextRollStatus(roll("demo-2"), a, NOW)).toEqual(roll("demo-2"));
  });

  it("drains once nothing movable is led, recording the handoff (and what stays led) with that action", () => {
    const a = planRoll(
      input({ roll: roll("demo-2"), members: maint, inFlightBroker: serving, ...led(["orders/2", false]) }),
    );
    expect(a).toMatchObject({
      kind: "drain",
      pod: "demo-2",
      handoff: { kept: ["orders/2"], timedOut: false },
    });
    expect(nextRollStatus(roll("demo-2"), a, NOW)).toEqual({
      ...roll("demo-2"),
      handoffDoneAt: new Date(NOW).toISOString(),
      leadersKept: ["orders/2"],
    });
    const none = planRoll(input({ roll: roll("demo-2"), members: maint, inFlightBroker: serving, ...led() }));
    expect(none).toMatchObject({ kind: "drain", handoff: { kept: [], timedOut: false } });
    expect(nextRollStatus(roll("demo-2"), none, NOW)).toEqual({
      ...roll("demo-2"),
      handoffDoneAt: new Date(NOW).toISOString(),
    });
  });

  it("goes on after handoffTimeoutMs from startedAt, saying it timed out", () => {
    const a = planRoll(
      input({
        roll: roll("demo-2", 30_000),
        members: maint,
        inFlightBroker: serving,
        ...led(["orders/0", true]),
      }),
    );
    expect(a).toMatchObject({ kind: "drain", handoff: { kept: ["orders/0"], timedOut: true } });
  });

  it("once recorded it is not waited for again (a restarted operator resumes from status.roll)", () => {
    const done = roll("demo-2", 5_000, { handoffDoneAt: new Date(NOW - 1_000).toISOString() });
    const a = planRoll(
      input({ roll: done, members: maint, inFlightBroker: pending(4), ...led(["orders/0", true]) }),
    );
    expect(a).toMatchObject({ kind: "wait", code: "Draining" });
    expect(a.handoff).toBeUndefined();
    expect(nextRollStatus(done, a, NOW)).toEqual(done);
    // Not recorded (an operator restarted mid-handoff): it waits again, bounded by startedAt.
    const again = planRoll(
      input({
        roll: roll("demo-2", 5_000),
        members: maint,
        inFlightBroker: serving,
        ...led(["orders/0", true]),
      }),
    );
    expect(again).toMatchObject({ kind: "wait", code: "HandingOffLeadership" });
  });

  it("the drain bound runs from the end of the handoff", () => {
    const done = roll("demo-2", 70_000, { handoffDoneAt: new Date(NOW - 30_000).toISOString() });
    expect(
      planRoll(input({ roll: done, members: maint, inFlightBroker: pending(4), ...led() })),
    ).toMatchObject({
      kind: "wait",
      code: "Draining",
    });
    const late = roll("demo-2", 70_000, { handoffDoneAt: new Date(NOW - 60_000).toISOString() });
    expect(
      planRoll(input({ roll: late, members: maint, inFlightBroker: pending(4), ...led() })),
    ).toMatchObject({
      kind: "stuck",
    });
  });

  it("the other brokers' gate comes first; the replacement pod needs no handoff", () => {
    const down = [member(0, "Down"), member(1), member(2, "Maintenance")];
    expect(
      planRoll(
        input({ roll: roll("demo-2"), members: down, inFlightBroker: serving, ...led(["orders/0", true]) }),
      ),
    ).toMatchObject({ kind: "wait", code: "MemberNotActive", gateBlocked: true });
    const replaced = planRoll(
      input({
        roll: roll("demo-2"),
        members: maint,
        pods: [pod(0), pod(1), pod(2, { revision: NEW, uid: "uid-2b" })],
        ...led(["orders/0", true]),
      }),
    );
    expect(replaced).toMatchObject({ kind: "finish" });
  });
});
