// The decisions the scale step (controller/cluster/step-scale.ts) makes
// around planScale in one pass: what the brokers' answers mean as probes,
// why a roll keeps scaling waiting, and, from the plan, how many moves are
// stuck, whether a refused scale-down is news, and when to come back.

import type { Condition, RollStatus, ScaleStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import type { BrokerMove, BrokerStatus } from "../../broker-client/types.ts";
import type { DecommissionProbe, MoveProbe, ScalePlan } from "./model.ts";

/** A destination's answer about a move (undefined: a 404, it knows no such move). */
export function moveProbeOf(answer: BrokerMove | undefined): MoveProbe {
  if (answer === undefined) return { kind: "unknown" };
  return {
    kind: "state",
    state: answer.state,
    ...(answer.error !== undefined ? { error: answer.error } : {}),
    ...(answer.copiedBytes !== undefined ? { copiedBytes: answer.copiedBytes } : {}),
    ...(answer.destHwm !== undefined ? { destHwm: answer.destHwm } : {}),
  };
}

/** The leaving member's admin status, as the removal gate reads it. */
export function decommissionProbeOf(s: BrokerStatus): DecommissionProbe {
  return {
    reachable: true,
    pendingRecords: s.wal.pendingRecords,
    ownedPartitions: s.ownedPartitions,
    refusingProduce: s.draining,
    movedAwayCopies: s.movedAwayCopies,
  };
}

/**
 * Why a roll keeps scaling waiting (ScaleInput.rollBusy), undefined when no
 * roll runs: the roll step's decision this pass when it ran (`thisPass`),
 * the persisted status.roll otherwise.
 */
export function rollBusyReason(
  thisPass: { next: RollStatus | undefined; outdated: number } | undefined,
  persisted: RollStatus | undefined,
  paused: boolean,
): string | undefined {
  const inFlight = thisPass !== undefined ? thisPass.next : persisted;
  if (inFlight !== undefined) return `${inFlight.podInFlight} in a planned restart`;
  if (thisPass !== undefined && thisPass.outdated > 0 && !paused)
    return `${thisPass.outdated} pod(s) to restart`;
  return undefined;
}

/** Moves stalled or stuck, plus partitions waiting out a retry backoff (the movesStuck gauge). */
export function stuckMoveCount(next: ScaleStatus | undefined, nowMs: number): number {
  const stalled = (next?.moves ?? []).filter(
    (m) => m.aborting?.stalled === true || m.stuckSince !== undefined,
  ).length;
  const waiting = (next?.moveRetries ?? []).filter((r) => Date.parse(r.notBefore) > nowMs).length;
  return stalled + waiting;
}

/**
 * Whether a refused scale-down is worth an Event: when the refusal starts
 * or its reason changes (Degraded, as persisted, says otherwise), not once
 * per pass.
 */
export function scaleDownBlockedIsNews(degraded: Condition | undefined, blocked: string): boolean {
  return degraded?.reason !== "ScaleDownBlocked" || !degraded.message.includes(blocked);
}

/**
 * When the scale step wants to run again: soon (`workingMs`) while a member
 * is decommissioned, moves run or a scale progresses; later (`blockedMs`)
 * while a scale-down is refused; undefined when there is nothing to do.
 */
export function scaleRequeueMs(
  plan: Pick<ScalePlan, "next" | "progress" | "blocked">,
  delays: { workingMs: number; blockedMs: number },
): number | undefined {
  const busy = plan.next?.decommissioning !== undefined || (plan.next?.moves ?? []).length > 0;
  if (busy || plan.progress !== undefined) return delays.workingMs;
  return plan.blocked ? delays.blockedMs : undefined;
}
