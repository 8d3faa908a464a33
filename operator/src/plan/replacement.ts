import type { RollStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import type { PodView } from "./pods.ts";

// A planned restart holds its member in Maintenance until the replacement
// pod is Ready, and Maintenance outranks Down: peers hold the member's
// records for it. A replacement that never becomes Ready (a bad image, a
// crash loop) would hold them forever while the cluster looks healthy. This
// bounds the wait. Pure: the caller keeps the first-seen time between passes.

export interface ReplacementInput {
  /** status.roll after this pass. */
  roll: RollStatus | undefined;
  pods: readonly PodView[];
  updateRevision: string | undefined;
  nowMs: number;
  /** Previous pass's record: which replacement pod (uid) was first seen not Ready when (operator clock). */
  seen: { podUid: string; sinceMs: number } | undefined;
  /** spec.rollout.replacementTimeoutSeconds × 1000. */
  timeoutMs: number;
  /** spec.rollout.releaseStuckReplacement: hand the member to the Down rules once stuck. */
  release: boolean;
  /**
   * The pod a persisted ReplacementNotReady condition names (an earlier term
   * already judged it stuck). With no record of our own (a new term clears
   * it), such a pod stays stuck rather than being held in Maintenance for a
   * second timeout, which would take a Down member back to Maintenance.
   */
  stuckBefore?: string | undefined;
  /**
   * Extra time allowed while the pod in flight is gone or terminating (its
   * terminationGracePeriodSeconds × 1000): a normal termination is not stuck.
   */
  terminationGraceMs?: number | undefined;
}

export interface ReplacementVerdict {
  /** What to keep for the next pass (undefined: no replacement is waiting). */
  seen: { podUid: string; sinceMs: number } | undefined;
  /** Set once the replacement has not been Ready for timeoutMs. */
  stuck: { pod: string; forMs: number; message: string } | undefined;
  /** Member ids to drop from the Maintenance holds this pass. */
  released: ReadonlySet<string>;
  /** Reconcile again after this long to catch the timeout (undefined: nothing pending). */
  recheckAfterMs: number | undefined;
}

export function judgeReplacement(input: ReplacementInput): ReplacementVerdict {
  const none: ReplacementVerdict = {
    seen: undefined,
    stuck: undefined,
    released: new Set(),
    recheckAfterMs: undefined,
  };
  const roll = input.roll;
  if (roll === undefined || input.updateRevision === undefined) return none;
  const found = input.pods.find((p) => p.name === roll.podInFlight);
  // The old pod draining is the roll's own business, bounded by
  // drainTimeoutSeconds. A pod in flight that is gone or terminating is
  // waiting for its replacement, which may never come (a Terminating pod on
  // a lost node stays so until someone force-deletes it): that wait is
  // bounded too, allowing terminationGraceMs for a normal termination.
  const gone = found === undefined || found.terminating;
  if (!gone && (found.revision !== input.updateRevision || found.ready)) return none;
  const key = gone ? `gone:${roll.podInFlight}` : found.uid;
  const boundMs = input.timeoutMs + (gone ? (input.terminationGraceMs ?? 0) : 0);
  const sinceMs =
    // The replacement, once created, starts its own clock: a termination
    // that took its whole grace must not eat into the replacement's bound.
    input.seen?.podUid === key
      ? input.seen.sinceMs
      : input.seen === undefined && input.stuckBefore === roll.podInFlight
        ? input.nowMs - boundMs
        : input.nowMs;
  const forMs = input.nowMs - sinceMs;
  const seen = { podUid: key, sinceMs };
  if (forMs < boundMs)
    return { seen, stuck: undefined, released: new Set(), recheckAfterMs: boundMs - forMs };
  const state = gone
    ? found === undefined
      ? "no pod: not recreated"
      : "the old pod is still terminating"
    : (found.containerState ?? "no container status yet");
  const message = `replacement pod ${roll.podInFlight} not Ready after ${Math.round(forMs / 1000)}s (${state})${
    input.release
      ? "; its member is no longer held in Maintenance: the Down rules apply, so peers reroute once its broker is unreachable"
      : "; its member stays in Maintenance (spec.rollout.releaseStuckReplacement is false)"
  }`;
  return {
    seen,
    stuck: { pod: roll.podInFlight, forMs, message },
    released: input.release ? new Set([roll.podInFlight]) : new Set(),
    recheckAfterMs: undefined,
  };
}
