import { describe, expect, it } from "vitest";
import type { PodView } from "./pods.ts";
import { judgeReplacement, type ReplacementInput } from "./replacement.ts";

const NOW = 1_000_000;
const roll = { podInFlight: "demo-2", startedAt: "2026-11-29T12:00:00Z", reason: "image" };
const replacement: PodView = {
  name: "demo-2",
  ordinal: 2,
  uid: "new",
  podIP: "127.1.0.3",
  ready: false,
  notReadySinceMs: undefined,
  terminating: false,
  revision: "rev-2",
  containerState: "waiting: CrashLoopBackOff, last exit 1: Error, 4 restarts",
};
const input = (over: Partial<ReplacementInput>): ReplacementInput => ({
  roll,
  pods: [replacement],
  updateRevision: "rev-2",
  nowMs: NOW,
  seen: undefined,
  timeoutMs: 300_000,
  release: true,
  ...over,
});

describe("judgeReplacement", () => {
  it("starts its clock at the first sight of the replacement, on the operator's clock", () => {
    const v = judgeReplacement(input({}));
    expect(v.seen).toEqual({ podUid: "new", sinceMs: NOW });
    expect(v.stuck).toBeUndefined();
    expect(v.recheckAfterMs).toBe(300_000);
  });

  it("past the bound: stuck, with the pod and its container state named, and released", () => {
    const v = judgeReplacement(input({ nowMs: NOW + 300_000, seen: { podUid: "new", sinceMs: NOW } }));
    expect(v.stuck?.message).toContain("demo-2 not Ready after 300s (waiting: CrashLoopBackOff");
    expect([...v.released]).toEqual(["demo-2"]);
  });

  it("the old pod draining, a Ready replacement, or no roll: nothing to judge", () => {
    expect(judgeReplacement(input({ pods: [{ ...replacement, revision: "rev-1" }] })).seen).toBeUndefined();
    expect(judgeReplacement(input({ pods: [{ ...replacement, ready: true }] })).seen).toBeUndefined();
    expect(judgeReplacement(input({ roll: undefined })).seen).toBeUndefined();
  });

  it("a newer replacement pod (another uid) restarts the clock", () => {
    const v = judgeReplacement(input({ nowMs: NOW + 400_000, seen: { podUid: "older", sinceMs: NOW } }));
    expect(v.stuck).toBeUndefined();
    expect(v.seen?.sinceMs).toBe(NOW + 400_000);
  });

  it("a pod an earlier term already reported stuck stays stuck in a new term (no second timeout in Maintenance)", () => {
    const v = judgeReplacement(input({ seen: undefined, stuckBefore: "demo-2" }));
    expect(v.stuck?.pod).toBe("demo-2");
    expect([...v.released]).toEqual(["demo-2"]);
    // Another pod's record does not carry over.
    expect(judgeReplacement(input({ seen: undefined, stuckBefore: "demo-1" })).stuck).toBeUndefined();
  });

  it("a pod in flight that stays gone or terminating is stuck after the bound plus its termination grace", () => {
    const terminating = { ...replacement, uid: "old", revision: "rev-1", terminating: true };
    const first = judgeReplacement(input({ pods: [terminating], terminationGraceMs: 75_000 }));
    expect(first.seen).toEqual({ podUid: "gone:demo-2", sinceMs: NOW });
    expect(first.recheckAfterMs).toBe(375_000);
    const later = judgeReplacement(
      input({ pods: [terminating], terminationGraceMs: 75_000, nowMs: NOW + 375_000, seen: first.seen }),
    );
    expect(later.stuck?.message).toContain("still terminating");
    expect([...later.released]).toEqual(["demo-2"]);
    const missing = judgeReplacement(input({ pods: [], nowMs: NOW + 300_000, seen: first.seen }));
    expect(missing.stuck?.message).toContain("not recreated");
    // The replacement, once created, starts its own clock.
    const created = judgeReplacement(input({ nowMs: NOW + 70_000, seen: first.seen }));
    expect(created.seen).toEqual({ podUid: "new", sinceMs: NOW + 70_000 });
  });
});
