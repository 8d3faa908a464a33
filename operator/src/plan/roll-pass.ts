// The decisions the roll step (controller/cluster/step-roll.ts) makes around
// planRoll in one pass: the action and the status.roll it leads to (a pod
// in flight replaced since the roll named it is named afresh first), why
// scaling keeps a roll from starting, what the handoff and a finished
// restart say, and when to come back.

import type { DrainCancelStatus, RollStatus, ScaleStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import { type HandoffOutcome, nextRollStatus, planRoll, type RollAction, type RollInput } from "./roll.ts";

/** This pass's roll action and the status.roll to write (undefined: cleared). */
export interface RollDecision {
  action: RollAction;
  next: RollStatus | undefined;
}

/**
 * `renamed`: the roll as rollForPodInFlight named afresh the pod in flight
 * (it was replaced since), which is persisted before anything is done to
 * it; undefined otherwise, and planRoll decides from `input`.
 */
export function decideRoll(renamed: RollStatus | undefined, input: RollInput): RollDecision {
  if (renamed !== undefined)
    return {
      action: {
        kind: "wait",
        code: "PodReplacing",
        pod: renamed.podInFlight,
        reason: `${renamed.podInFlight} was replaced since the roll named it and is still outdated: restarting the new pod (${renamed.podReadyAtStart ? "Ready" : "not Ready"})`,
      },
      next: renamed,
    };
  const action = planRoll(input);
  return { action, next: nextRollStatus(input.roll, action, input.nowMs) };
}

/** Partition moves in flight keep a roll from starting (RollInput.scaleBusy). */
export function scaleBusyReason(scale: ScaleStatus | undefined): string | undefined {
  const n = scale?.moves?.length ?? 0;
  return n > 0 ? `${n} partition move(s) in flight` : undefined;
}

export interface RollEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** The Event of a handoff that ended (every led partition moved, or some kept). */
export function handoffEvent(
  pod: string | undefined,
  h: HandoffOutcome,
  waitedMs: number,
  handoffTimeoutMs: number,
): RollEvent {
  if (h.kept.length === 0)
    return {
      type: "Normal",
      reason: "LeadershipHandedOff",
      message: `${pod} leads no replicated partition (handoff done in ${waitedMs} ms); draining it`,
    };
  const why = h.timedOut
    ? `leadership did not move within ${handoffTimeoutMs / 1000}s`
    : "no other in-sync replica is Active on its recorded volume";
  return {
    type: "Warning",
    reason: "LeadershipKept",
    message: `${pod} still leads ${h.kept.length} replicated partition(s) (${h.kept.slice(0, 10).join(", ")}${h.kept.length > 10 ? ", …" : ""}): ${why}; they stay led by it and are unavailable while it restarts`,
  };
}

/** The Event of a pod restarted and Ready at the new revision, with `left` outdated pods to go. */
export function rollFinishedEvent(pod: string, revision: string, left: number): RollEvent {
  return {
    type: "Normal",
    reason: left === 0 ? "RollComplete" : "RollingUpdate",
    message:
      left === 0
        ? `${pod} restarted and Ready at revision ${revision}; every pod runs it now`
        : `${pod} restarted and Ready at revision ${revision}; ${left} pod(s) to go`,
  };
}

/** status.drainCancel for a restart abandoned while its broker may drain (the cancel not confirmed). */
export function owedDrainCancel(
  pod: string,
  nowMs: number,
  attempts: number,
  lastError: string,
): DrainCancelStatus {
  return { pod, since: new Date(nowMs).toISOString(), attempts, lastError };
}

/**
 * When the roll step wants to run again, while a roll runs (a pod in flight,
 * or outdated pods and the rollout not paused): soon after an action
 * (`actingMs`), a little later while it waits (`waitingMs`); undefined when
 * no roll runs.
 */
export function rollRequeueMs(
  o: { next: RollStatus | undefined; outdated: number; paused: boolean; action: RollAction },
  delays: { waitingMs: number; actingMs: number },
): number | undefined {
  const rolling = o.next !== undefined || (o.outdated > 0 && !o.paused);
  if (!rolling) return undefined;
  const waiting = o.action.kind === "wait" || o.action.kind === "stuck" || o.action.kind === "none";
  return waiting ? delays.waitingMs : delays.actingMs;
}
