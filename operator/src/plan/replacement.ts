import type { RollStatus } from "../api/v1alpha1/types.ts";
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
  const pod = input.pods.find((p) => p.name === roll.podInFlight);
  // Only the replacement counts: the old pod draining or terminating is the
  // roll's own business, bounded by drainTimeoutSeconds.
  if (pod === undefined || pod.terminating || pod.revision !== input.updateRevision || pod.ready) return none;
  const sinceMs =
    input.seen?.podUid === pod.uid
      ? input.seen.sinceMs
      : input.seen === undefined && input.stuckBefore === pod.name
        ? input.nowMs - input.timeoutMs
        : input.nowMs;
  const forMs = input.nowMs - sinceMs;
  const seen = { podUid: pod.uid, sinceMs };
  if (forMs < input.timeoutMs)
    return { seen, stuck: undefined, released: new Set(), recheckAfterMs: input.timeoutMs - forMs };
  const state = pod.containerState ?? "no container status yet";
  const message = `replacement pod ${pod.name} not Ready after ${Math.round(forMs / 1000)}s (${state})${
    input.release
      ? "; its member is no longer held in Maintenance: the Down rules apply, so peers reroute once its broker is unreachable"
      : "; its member stays in Maintenance (spec.rollout.releaseStuckReplacement is false)"
  }`;
  return {
    seen,
    stuck: { pod: pod.name, forMs, message },
    released: input.release ? new Set([pod.name]) : new Set(),
    recheckAfterMs: undefined,
  };
}
