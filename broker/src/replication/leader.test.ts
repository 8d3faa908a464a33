import { describe, expect, it } from "vitest";
import type { IsrMember } from "../../../packages/api/src/v1alpha1/replication.ts";
import {
  ackDecision,
  admitAcksAll,
  type FollowerProgress,
  highWatermark,
  hwmMembers,
  type LeaderView,
  planIsrChange,
  recordFetch,
} from "./leader.ts";

const isr = (...ids: string[]): IsrMember[] => ids.map((member) => ({ member, volumeId: `v${member}` }));
const f = (member: string, logEnd: number, caughtUpAtMs = 0, volumeId = `v${member}`): FollowerProgress => ({
  member,
  volumeId,
  logEnd,
  caughtUpAtMs,
  leaderEndAtFetch: logEnd,
});
const view = (over: Partial<LeaderView> = {}): LeaderView => ({
  self: "a",
  selfVolumeId: "va",
  logEnd: 20,
  hwm: 5,
  epochStartOffset: 0,
  recordedIsr: isr("a", "b", "c"),
  minInsync: 2,
  pending: null,
  followers: new Map([
    ["b", f("b", 12)],
    ["c", f("c", 15)],
  ]),
  ...over,
});

describe("highWatermark", () => {
  it("is the smallest durable end over the recorded ISR", () => {
    expect(highWatermark(view())).toBe(12);
    expect(highWatermark(view({ recordedIsr: isr("a", "c") }))).toBe(15);
    expect(highWatermark(view({ recordedIsr: isr("a"), minInsync: 1 }))).toBe(20);
  });

  it("stops while the recorded ISR is below min_insync_replicas", () => {
    expect(highWatermark(view({ recordedIsr: isr("a") }))).toBe(5);
    expect(highWatermark(view({ recordedIsr: isr("a", "c"), minInsync: 3 }))).toBe(5);
  });

  it("never moves back", () => {
    expect(highWatermark(view({ hwm: 14 }))).toBe(14);
  });

  it("holds while an ISR member's progress is unknown or from another volume", () => {
    expect(highWatermark(view({ followers: new Map([["b", f("b", 30)]]) }))).toBe(5);
    expect(
      highWatermark(
        view({
          followers: new Map([
            ["b", f("b", 30, 0, "vb-new")],
            ["c", f("c", 30)],
          ]),
        }),
      ),
    ).toBe(5);
  });

  it("waits for the members of an ISR change in flight as well (never an unrecorded shrink)", () => {
    const v = view({ recordedIsr: isr("a", "c"), pending: { isr: isr("a", "b", "c") } });
    expect(hwmMembers(v).map((m) => m.member)).toEqual(["a", "c", "b"]);
    expect(highWatermark(v)).toBe(12);
    // A proposed shrink is not used until recorded.
    expect(highWatermark(view({ pending: { isr: isr("a", "c") } }))).toBe(12);
  });
});

describe("ackDecision", () => {
  it("acks once the HWM passes the batch's last offset", () => {
    expect(ackDecision({ lastOffset: 11, hwm: 12, recordedIsrSize: 2, minInsync: 2 })).toEqual({
      kind: "ack",
    });
    expect(ackDecision({ lastOffset: 12, hwm: 12, recordedIsrSize: 2, minInsync: 2 })).toEqual({
      kind: "wait",
    });
  });

  it("refuses retryably below min_insync_replicas, never settling for one copy", () => {
    const d = ackDecision({ lastOffset: 1, hwm: 12, recordedIsrSize: 1, minInsync: 2 });
    expect(d).toMatchObject({ kind: "refuse", code: "not_enough_replicas" });
    expect(admitAcksAll(1, 2).kind).toBe("refuse");
    expect(admitAcksAll(2, 2).kind).toBe("admit");
  });
});

describe("recordFetch", () => {
  it("restarts the lag clock when the follower reached the leader's end as of its previous fetch", () => {
    const a = recordFetch(undefined, { member: "b", volumeId: "vb", fetchOffset: 10 }, 20, 100);
    expect(a.caughtUpAtMs).toBe(Number.NEGATIVE_INFINITY);
    // Leader was at 20 when it answered; the follower fetches at 20 while the leader reached 23.
    const b = recordFetch(a, { member: "b", volumeId: "vb", fetchOffset: 20 }, 23, 200);
    expect(b.caughtUpAtMs).toBe(200);
    // At 22 it is behind the 23 of its previous answer.
    const c = recordFetch(b, { member: "b", volumeId: "vb", fetchOffset: 22 }, 25, 300);
    expect(c.caughtUpAtMs).toBe(200);
    // Another volume starts from nothing.
    const d = recordFetch(c, { member: "b", volumeId: "vb2", fetchOffset: 0 }, 25, 400);
    expect(d.caughtUpAtMs).toBe(Number.NEGATIVE_INFINITY);
    expect(recordFetch(d, { member: "b", volumeId: "vb2", fetchOffset: 25 }, 25, 500).caughtUpAtMs).toBe(500);
  });
});

describe("planIsrChange", () => {
  const base = { replicas: ["a", "b", "c"], replicaLagMs: 1000, leaderStartMs: 0 };

  it("shrinks a follower not caught up for replica_lag_ms", () => {
    const v = view({
      followers: new Map([
        ["b", f("b", 12, 100)],
        ["c", f("c", 20, 1900)],
      ]),
    });
    expect(planIsrChange({ ...base, view: v, nowMs: 1000 })).toBeNull();
    expect(planIsrChange({ ...base, view: v, nowMs: 1100 })?.map((m) => m.member)).toEqual(["a", "c"]);
  });

  it("never shrinks below min_insync_replicas, keeping the least lagging", () => {
    const v = view({
      followers: new Map([
        ["b", f("b", 12, 0)],
        ["c", f("c", 15, 0)],
      ]),
    });
    expect(planIsrChange({ ...base, view: v, nowMs: 5000 })?.map((m) => m.member)).toEqual(["a", "c"]);
    expect(planIsrChange({ ...base, view: { ...v, minInsync: 3 }, nowMs: 5000 })).toBeNull();
    expect(
      planIsrChange({ ...base, view: { ...v, minInsync: 1 }, nowMs: 5000 })?.map((m) => m.member),
    ).toEqual(["a"]);
  });

  it("counts a follower never heard from as lagging since the leader started", () => {
    const v = view({ followers: new Map([["c", f("c", 20, 50)]]) });
    expect(planIsrChange({ ...base, view: v, nowMs: 900, leaderStartMs: 0 })).toBeNull();
    expect(planIsrChange({ ...base, view: v, nowMs: 1000, leaderStartMs: 0 })?.map((m) => m.member)).toEqual([
      "a",
      "c",
    ]);
  });

  it("removes at once a member fetching from another volume", () => {
    const v = view({
      followers: new Map([
        ["b", f("b", 0, 10, "vb2")],
        ["c", f("c", 20, 10)],
      ]),
    });
    expect(planIsrChange({ ...base, view: v, nowMs: 20 })?.map((m) => m.member)).toEqual(["a", "c"]);
  });

  it("adds back a replica whose end reached the HWM, with the volume it fetches from", () => {
    const v = view({
      recordedIsr: isr("a", "c"),
      followers: new Map([
        ["b", f("b", 15, 10, "vb2")],
        ["c", f("c", 15, 10)],
      ]),
    });
    expect(planIsrChange({ ...base, view: v, nowMs: 20 })).toEqual([
      ...isr("a", "c"),
      { member: "b", volumeId: "vb2" },
    ]);
    const behind = view({
      recordedIsr: isr("a", "c"),
      followers: new Map([
        ["b", f("b", 14)],
        ["c", f("c", 15, 10)],
      ]),
    });
    expect(planIsrChange({ ...base, view: behind, nowMs: 20 })).toBeNull();
  });

  it("adds back only a replica that also reached the start of the leader's epoch", () => {
    // A restarted leader knows HWM 5 but its epoch began at 18: records up to 17 may be acknowledged.
    const v = view({
      recordedIsr: isr("a", "c"),
      epochStartOffset: 18,
      followers: new Map([
        ["b", f("b", 12, 10)],
        ["c", f("c", 10, 10)],
      ]),
    });
    expect(highWatermark(v)).toBe(10);
    expect(planIsrChange({ ...base, view: v, nowMs: 20 })).toBeNull();
    const caught = { ...v, followers: new Map([...v.followers, ["b", f("b", 18, 10)]]) };
    expect(planIsrChange({ ...base, view: caught, nowMs: 20 })?.map((m) => m.member)).toEqual([
      "a",
      "c",
      "b",
    ]);
  });

  it("does not add back a follower that stopped fetching (its last progress is stale)", () => {
    // b died after its last fetch at 12 (caught up at t=100); the shrink
    // removed it; the HWM then reached 12 (nothing new was produced). Its
    // progress still says 12 >= HWM, but it has not been caught up for
    // replica_lag_ms: adding it back would hold the HWM at 12 again.
    const v = view({
      recordedIsr: isr("a", "c"),
      hwm: 12,
      logEnd: 12,
      followers: new Map([
        ["b", f("b", 12, 100)],
        ["c", f("c", 12, 1150)],
      ]),
    });
    expect(highWatermark(v)).toBe(12);
    expect(planIsrChange({ ...base, view: v, nowMs: 1150 })).toBeNull();
    // Fetching again (caught up now): added back.
    const back = { ...v, followers: new Map([...v.followers, ["b", f("b", 12, 1200)]]) };
    expect(planIsrChange({ ...base, view: back, nowMs: 1210 })?.map((m) => m.member)).toEqual([
      "a",
      "c",
      "b",
    ]);
  });

  it("asks for nothing while a change is in flight", () => {
    const v = view({ pending: { isr: isr("a", "b") }, followers: new Map() });
    expect(planIsrChange({ ...base, view: v, nowMs: 99_999 })).toBeNull();
  });
});
