import { describe, expect, it } from "vitest";
import type {
  MemberStatus,
  PartitionMoveStatus,
  ScaleStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { abortCandidates, type MoveTiming, retryDelayMs } from "./move-stall.ts";
import type { PodView } from "./pods.ts";
import { type MoveProbe, moveKey, planScale, type ScaleInput, type ScaleTopic } from "./scale.ts";

// Stalled partition moves, through planScale: abort before the owner swap
// (confirmed against the API server's owner), never after it; the cancel
// repeated until the destination confirms; a backoff before the partition
// moves again, preferably elsewhere.

const T0 = Date.parse("2026-12-01T10:00:00Z");
const S = 1000;
const timing: MoveTiming = { stallMs: 60 * S, retryBackoffMs: 30 * S, retryBackoffMaxMs: 600 * S };

const pod = (i: number, over: Partial<PodView> = {}): PodView => ({
  name: `demo-${i}`,
  ordinal: i,
  uid: `uid-${i}`,
  podIP: `127.1.0.${i + 1}`,
  ready: true,
  notReadySinceMs: undefined,
  terminating: false,
  revision: "r1",
  ...over,
});
const member = (i: number, state: MemberStatus["state"] = "Active"): MemberStatus => ({
  id: `demo-${i}`,
  pod: `demo-${i}`,
  ordinal: i,
  state,
  since: "2026-12-01T09:00:00Z",
});
const topic = (owners: number[]): ScaleTopic => ({
  name: "a",
  assignments: owners.map((o, partition) => ({ partition, owner: `demo-${o}` })),
});
const move = (over: Partial<PartitionMoveStatus> = {}): PartitionMoveStatus => ({
  topic: "a",
  partition: 0,
  from: "demo-3",
  to: "demo-1",
  startedAt: new Date(T0).toISOString(),
  state: "copying",
  ...over,
});
const copying = (bytes: number): MoveProbe => ({ kind: "state", state: "copying", copiedBytes: bytes });
const unreachable: MoveProbe = { kind: "unreachable", error: "timeout" };

/** demo-3 decommissioning (replicas 3), owning partition 0 (and 1 when asked). */
function input(
  nowMs: number,
  scale: ScaleStatus,
  probe: MoveProbe | undefined,
  over: Partial<ScaleInput> = {},
): ScaleInput {
  return {
    nowMs,
    replicas: 3,
    members: [member(0), member(1), member(2), member(3, "Decommissioning")],
    pods: [0, 1, 2, 3].map((i) => pod(i)),
    scale,
    topics: [topic([3])],
    rollBusy: undefined,
    rebalance: false,
    rebalanceRequest: undefined,
    moveProbes: new Map(probe === undefined ? [] : [["a/0", probe]]),
    decommissionProbe: undefined,
    maxMoves: 2,
    timing,
    ...over,
  };
}
const dec = (moves: PartitionMoveStatus[], extra: Partial<ScaleStatus> = {}): ScaleStatus => ({
  decommissioning: "demo-3",
  moves,
  ...extra,
});
const liveFrom = new Map([["a/0", "demo-3"]]);

describe("stalled moves: before the owner swap", () => {
  it("a copy that keeps progressing is never aborted, however long it takes", () => {
    let scale = dec([move()]);
    for (let i = 1; i <= 20; i++) {
      const p = planScale(input(T0 + i * 30 * S, scale, copying(i * 1_000_000), { liveOwners: liveFrom }));
      expect(p.cancel).toEqual([]);
      expect(p.stuck).toBeUndefined();
      scale = p.next as ScaleStatus;
    }
    expect(scale.moves?.[0]?.progressMark).toBe("copying:20000000:0");
  });

  it("no progress past the bound, source confirmed live: cancelled, marked aborting, Event and metric", () => {
    const m = move({ progressAt: new Date(T0).toISOString(), progressMark: "copying:5:0" });
    const p = planScale(input(T0 + 61 * S, dec([m]), unreachable, { liveOwners: liveFrom }));
    expect(p.cancel.map(moveKey)).toEqual(["a/0"]);
    expect(p.start).toEqual([]);
    expect(p.swap).toEqual([]);
    expect(p.aborted.map((a) => a.cause)).toEqual(["unreachable"]);
    expect(p.next?.moves?.[0]?.aborting).toMatchObject({ stalled: true, attempts: 1 });
    const ev = p.events.find((e) => e.reason === "MoveAborted");
    expect(ev?.type).toBe("Warning");
    expect(ev?.message).toMatch(/a\/0 from demo-3 to demo-1 aborted: no progress on demo-1 for 61s/);
    expect(p.stuck).toMatch(/move of a\/0 from demo-3 to demo-1 aborted/);
  });

  it("past the bound but the owner could not be read live: not aborted this pass", () => {
    const p = planScale(input(T0 + 61 * S, dec([move()]), copying(0)));
    expect(p.cancel).toEqual([]);
    expect(p.next?.moves?.[0]?.aborting).toBeUndefined();
  });

  it("a stale cache: the API server already has the swap, so the move is neither cancelled nor swapped again", () => {
    const p = planScale(
      input(
        T0 + 61 * S,
        dec([move({ state: "ready", progressMark: "ready:0:0" })]),
        { kind: "state", state: "ready" },
        {
          liveOwners: new Map([["a/0", "demo-1"]]),
        },
      ),
    );
    expect(p.cancel).toEqual([]);
    expect(p.swap).toEqual([]);
    expect(p.next?.moves?.[0]?.aborting).toBeUndefined();
  });

  it("abortCandidates names only unswapped, unaborted moves past the bound after this pass's probe", () => {
    const moves = [
      move(),
      move({ partition: 1 }),
      move({ partition: 2, aborting: { reason: "x", stalled: true, since: "x", attempts: 1 } }),
    ];
    const owner = (m: PartitionMoveStatus) => (m.partition === 1 ? "demo-1" : "demo-3");
    const probes = new Map<string, MoveProbe>([["a/0", unreachable]]);
    expect(abortCandidates(moves, owner, probes, moveKey, T0 + 61 * S, timing.stallMs).map(moveKey)).toEqual([
      "a/0",
    ]);
    // Progress seen this very pass restarts the clock.
    probes.set("a/0", copying(7));
    expect(abortCandidates(moves, owner, probes, moveKey, T0 + 61 * S, timing.stallMs)).toEqual([]);
  });
});

describe("stalled moves: the abort until confirmed, then the retry", () => {
  const aborting = move({
    aborting: { reason: "no progress", stalled: true, since: new Date(T0).toISOString(), attempts: 1 },
  });

  it("a cancel that failed (destination away) is sent again every pass and reported", () => {
    const p = planScale(input(T0 + 70 * S, dec([aborting]), unreachable));
    expect(p.cancel.map(moveKey)).toEqual(["a/0"]);
    expect(p.next?.moves?.[0]?.aborting).toMatchObject({ attempts: 2, lastError: "timeout" });
    expect(p.stuck).toMatch(/not confirmed the cancel after 2 attempt\(s\) \(timeout\)/);
    // The partition is not planned elsewhere while the zombie may still hold the freeze.
    expect(p.next?.moves).toHaveLength(1);
  });

  it("a destination that resumed and reports ready is cancelled again, never swapped", () => {
    const p = planScale(input(T0 + 70 * S, dec([aborting]), { kind: "state", state: "ready" }));
    expect(p.swap).toEqual([]);
    expect(p.cancel.map(moveKey)).toEqual(["a/0"]);
  });

  it("an operator restarted mid-abort carries on from status alone", () => {
    // No memory, no live read: the persisted aborting mark is enough.
    const p = planScale(input(T0 + 5 * 60 * S, dec([aborting]), copying(1)));
    expect(p.cancel.map(moveKey)).toEqual(["a/0"]);
    expect(p.start).toEqual([]);
  });

  it("confirmed (cancelled, failed, an earlier move's done, or unknown): dropped, backoff, then moved again avoiding the stalled destination", () => {
    for (const probe of [
      { kind: "state", state: "cancelled" },
      { kind: "state", state: "failed" },
      // An earlier move's "done" of the same partition (a DELETE cannot change it: 409).
      { kind: "state", state: "done" },
      { kind: "unknown" },
    ] as MoveProbe[]) {
      const now = T0 + 70 * S;
      const p = planScale(input(now, dec([aborting]), probe));
      expect(p.next?.moves ?? []).toEqual([]);
      expect(p.next?.moveRetries).toEqual([
        {
          topic: "a",
          partition: 0,
          attempts: 1,
          notBefore: new Date(now + 30 * S).toISOString(),
          avoid: "demo-1",
          reason: "no progress",
        },
      ]);
      expect(p.events.find((e) => e.reason === "MoveCancelled")?.message).toMatch(/moved again after/);
      expect(p.stuck).toMatch(/a\/0 aborted 1 time\(s\)/);

      // Within the backoff: not planned.
      const wait = planScale(input(now + 10 * S, p.next as ScaleStatus, undefined));
      expect(wait.next?.moves ?? []).toEqual([]);
      expect(wait.stuck).toMatch(/moved again after/);

      // After it: planned again, to demo-0 or demo-2, not demo-1.
      const again = planScale(input(now + 31 * S, wait.next as ScaleStatus, undefined));
      expect(again.next?.moves?.map((m) => m.to)).toEqual(["demo-0"]);
      expect(again.events.find((e) => e.reason === "MovePlanned")?.message).toMatch(/again, after 1 abort/);
      expect(again.stuck).toBeUndefined();
      // The retry entry stays while the partition moves, so a second abort backs off longer.
      expect(again.next?.moveRetries?.[0]?.attempts).toBe(1);
    }
  });

  it("a second abort of the same partition doubles the backoff; the bound caps it", () => {
    const now = T0 + 70 * S;
    const scale = dec([aborting], {
      moveRetries: [
        {
          topic: "a",
          partition: 0,
          attempts: 1,
          notBefore: "2026-12-01T09:00:00Z",
          avoid: "demo-2",
          reason: "x",
        },
      ],
    });
    const p = planScale(input(now, scale, { kind: "unknown" }));
    expect(p.next?.moveRetries?.[0]).toMatchObject({
      attempts: 2,
      notBefore: new Date(now + 60 * S).toISOString(),
      avoid: "demo-1",
    });
    expect(retryDelayMs(10, timing)).toBe(600 * S);
  });

  it("a successful move clears the retry entry", () => {
    const scale = dec([move({ to: "demo-0" })], {
      moveRetries: [
        {
          topic: "a",
          partition: 0,
          attempts: 1,
          notBefore: "2026-12-01T09:00:00Z",
          avoid: "demo-1",
          reason: "x",
        },
      ],
    });
    const p = planScale(input(T0 + 5 * S, scale, { kind: "state", state: "done" }, { topics: [topic([0])] }));
    expect(p.events.map((e) => e.reason)).toContain("PartitionMoved");
    expect(p.next?.moveRetries).toBeUndefined();
  });

  it("an abort the cache shows swapped after all is dropped: the move must finish", () => {
    const p = planScale(input(T0 + 70 * S, dec([aborting]), copying(1), { topics: [topic([1])] }));
    expect(p.cancel).toEqual([]);
    expect(p.next?.moves?.[0]?.aborting).toBeUndefined();
    expect(p.events.map((e) => e.reason)).toContain("MoveAbortDropped");
  });

  it("a second failure during the abort (the source's pod goes too) does not change the plan: cancel until confirmed", () => {
    const p = planScale(
      input(T0 + 70 * S, dec([aborting]), unreachable, {
        pods: [0, 1, 2].map((i) => pod(i)),
      }),
    );
    expect(p.cancel.map(moveKey)).toEqual(["a/0"]);
    expect(p.holds.get("demo-3")).toBe("Decommissioning");
  });
});

describe("stalled moves: after the owner swap", () => {
  it("never aborted: reported once (MoveStuck), kept until the destination installs", () => {
    const m = move({ state: "ready", progressAt: new Date(T0).toISOString(), progressMark: "ready:9:9" });
    const swapped = { topics: [topic([1])], liveOwners: new Map([["a/0", "demo-1"]]) };
    const p = planScale(input(T0 + 61 * S, dec([m]), unreachable, swapped));
    expect(p.cancel).toEqual([]);
    expect(p.aborted).toEqual([]);
    expect(p.next?.moves?.[0]?.stuckSince).toBe(new Date(T0 + 61 * S).toISOString());
    expect(p.events.filter((e) => e.reason === "MoveStuck")).toHaveLength(1);
    expect(p.stuck).toMatch(/handed to demo-1 \(owner swapped\).*never aborted; demo-3 keeps its copy/);
    const later = planScale(input(T0 + 90 * S, p.next as ScaleStatus, unreachable, swapped));
    expect(later.events.filter((e) => e.reason === "MoveStuck")).toEqual([]);
    expect(later.cancel).toEqual([]);
    // Installed at last: finished, the report clears.
    const done = planScale(
      input(T0 + 95 * S, later.next as ScaleStatus, { kind: "state", state: "done" }, swapped),
    );
    expect(done.events.map((e) => e.reason)).toContain("PartitionMoved");
    expect(done.stuck).toBeUndefined();
  });
});

describe("stalled moves: rebalance", () => {
  it("a partition waiting out its backoff is not picked by the rebalance", () => {
    const members = [0, 1, 2].map((i) => member(i));
    const scale: ScaleStatus = {
      moveRetries: [
        {
          topic: "a",
          partition: 3,
          attempts: 1,
          notBefore: new Date(T0 + 20 * S).toISOString(),
          avoid: "demo-2",
          reason: "x",
        },
      ],
    };
    const p = planScale(
      input(T0, scale, undefined, {
        members,
        pods: [0, 1, 2].map((i) => pod(i)),
        topics: [topic([0, 0, 0, 0, 1, 1])],
        rebalance: true,
      }),
    );
    const picked = (p.next?.moves ?? []).map(moveKey);
    expect(picked.length).toBeGreaterThan(0);
    expect(picked).not.toContain("a/3");
  });
});
