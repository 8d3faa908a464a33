import { describe, expect, it } from "vitest";
import type {
  Condition,
  PartitionMoveStatus,
  RollStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  moveProbeOf,
  rollBusyReason,
  scaleDownBlockedIsNews,
  scaleRequeueMs,
  stuckMoveCount,
} from "./pass.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const roll = (pod: string): RollStatus => ({
  podInFlight: pod,
  startedAt: "2026-11-29T11:59:00Z",
  reason: "r",
});
const move: PartitionMoveStatus = {
  topic: "t",
  partition: 0,
  from: "demo-2",
  to: "demo-0",
  state: "copying",
  startedAt: "2026-11-29T11:00:00Z",
};
const delays = { workingMs: 2_000, blockedMs: 10_000 };

describe("the scale step's decisions around planScale", () => {
  it("a 404 from the destination is an unknown move; an answer keeps only the fields it has", () => {
    expect(moveProbeOf(undefined)).toEqual({ kind: "unknown" });
    expect(moveProbeOf({ state: "copying", copiedBytes: 10, sourceHwm: 9 })).toEqual({
      kind: "state",
      state: "copying",
      copiedBytes: 10,
    });
  });

  it("the roll this pass wins over the persisted one; outdated pods count unless paused", () => {
    expect(rollBusyReason({ next: roll("demo-1"), outdated: 2 }, roll("demo-0"), false)).toBe(
      "demo-1 in a planned restart",
    );
    // The roll step finished this pass: the persisted roll no longer holds scaling.
    expect(rollBusyReason({ next: undefined, outdated: 0 }, roll("demo-0"), false)).toBeUndefined();
    expect(rollBusyReason(undefined, roll("demo-0"), false)).toBe("demo-0 in a planned restart");
    expect(rollBusyReason({ next: undefined, outdated: 2 }, undefined, false)).toBe("2 pod(s) to restart");
    expect(rollBusyReason({ next: undefined, outdated: 2 }, undefined, true)).toBeUndefined();
  });

  it("stuck moves: stalled or stuck ones, and retries still in their backoff", () => {
    const n = stuckMoveCount(
      {
        moves: [
          move,
          { ...move, partition: 1, stuckSince: "2026-11-29T11:00:00Z" },
          {
            ...move,
            partition: 2,
            aborting: { reason: "x", stalled: true, since: "2026-11-29T11:00:00Z", attempts: 1 },
          },
        ],
        moveRetries: [
          {
            topic: "t",
            partition: 3,
            attempts: 1,
            avoid: "demo-0",
            reason: "stalled",
            notBefore: "2026-11-29T12:01:00Z",
          },
          {
            topic: "t",
            partition: 4,
            attempts: 1,
            avoid: "demo-0",
            reason: "stalled",
            notBefore: "2026-11-29T11:59:00Z",
          },
        ],
      },
      NOW,
    );
    expect(n).toBe(3);
    expect(stuckMoveCount(undefined, NOW)).toBe(0);
  });

  it("a refused scale-down is news when it starts or its reason changes", () => {
    const degraded = (reason: string, message: string): Condition => ({
      type: "Degraded",
      status: "True",
      lastTransitionTime: "2026-11-29T11:00:00Z",
      reason,
      message,
    });
    expect(scaleDownBlockedIsNews(undefined, "refused: a")).toBe(true);
    expect(scaleDownBlockedIsNews(degraded("MoveStuck", "refused: a"), "refused: a")).toBe(true);
    expect(scaleDownBlockedIsNews(degraded("ScaleDownBlocked", "x; refused: a"), "refused: a")).toBe(false);
    expect(scaleDownBlockedIsNews(degraded("ScaleDownBlocked", "refused: a"), "refused: b")).toBe(true);
  });

  it("comes back soon while working, later while refused, not at all when idle", () => {
    const plan = { next: undefined, progress: undefined, blocked: undefined };
    expect(scaleRequeueMs(plan, delays)).toBeUndefined();
    expect(scaleRequeueMs({ ...plan, blocked: "refused" }, delays)).toBe(10_000);
    expect(scaleRequeueMs({ ...plan, next: { decommissioning: "demo-2" }, blocked: "refused" }, delays)).toBe(
      2_000,
    );
    expect(scaleRequeueMs({ ...plan, next: { moves: [move] } }, delays)).toBe(2_000);
    expect(scaleRequeueMs({ ...plan, progress: { reason: "ScalingUp", message: "m" } }, delays)).toBe(2_000);
  });
});
