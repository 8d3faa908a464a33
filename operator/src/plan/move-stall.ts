import type { MoveRetry, PartitionMoveStatus } from "../../../packages/api/src/v1alpha1/types.ts";

// Stalled partition moves, pure. A move is judged by what its destination
// reports, pass after pass: a new state or more bytes copied is progress;
// an unreachable destination, an unknown move, or the same numbers again
// are not. Past stallMs without progress:
//   - before the owner swap, the move is aborted: cancelled on the
//     destination (the source's freeze ends with it), never swapped again,
//     and its partition moved again after a backoff;
//   - after the swap it is only reported: the destination owns the
//     partition and is the only place its new commits can go, so it must
//     install the copy it staged (the source keeps its own copy until then).
// Before an abort the owner is read from the API server, not the cache: a
// swap our cache has not seen yet must never be undone by a cancel.

/** What the destination answered this pass (scale.ts MoveProbe, narrowed to what matters here). */
export type ProgressProbe =
  | { kind: "state"; state: string; copiedBytes?: number; destHwm?: number }
  | { kind: "unknown" }
  | { kind: "unreachable"; error: string };

export interface MoveTiming {
  /** spec.moves.stallTimeoutSeconds × 1000. */
  stallMs: number;
  /** spec.moves.retryBackoffSeconds × 1000: the first backoff. */
  retryBackoffMs: number;
  /** Cap on the doubled backoff. */
  retryBackoffMaxMs: number;
}

/**
 * A signature of the destination's progress; undefined when the probe shows
 * none. Only a running move (copying, ready) counts: an end state may be an
 * earlier move's, and is handled as such by the caller.
 */
export function progressMark(probe: ProgressProbe | undefined): string | undefined {
  if (probe?.kind !== "state" || (probe.state !== "copying" && probe.state !== "ready")) return undefined;
  return `${probe.state}:${probe.copiedBytes ?? 0}:${probe.destHwm ?? 0}`;
}

/** The move with its progress clock advanced when this pass shows progress. */
export function trackProgress(
  m: PartitionMoveStatus,
  probe: ProgressProbe | undefined,
  nowMs: number,
): PartitionMoveStatus {
  const mark = progressMark(probe);
  if (mark === undefined || mark === m.progressMark) return m;
  return { ...m, progressMark: mark, progressAt: new Date(nowMs).toISOString() };
}

/** How long the move has gone without progress (from startedAt until a first progress). */
export function stalledForMs(m: PartitionMoveStatus, nowMs: number): number {
  const since = Date.parse(m.progressAt ?? m.startedAt);
  return Number.isFinite(since) ? Math.max(0, nowMs - since) : 0;
}

/**
 * Moves that would be aborted this pass if the API server confirms their
 * source still owns the partition: not already aborting, still owned by the
 * source in the cache, and stalled past stallMs counting this pass's probe.
 * The controller reads these topics live and passes the owners to planScale.
 */
export function abortCandidates(
  moves: readonly PartitionMoveStatus[],
  cachedOwner: (m: PartitionMoveStatus) => string | undefined,
  probes: ReadonlyMap<string, ProgressProbe>,
  key: (m: PartitionMoveStatus) => string,
  nowMs: number,
  stallMs: number,
): PartitionMoveStatus[] {
  return moves.filter(
    (m) =>
      m.aborting === undefined &&
      cachedOwner(m) === m.from &&
      stalledForMs(trackProgress(m, probes.get(key(m)), nowMs), nowMs) >= stallMs,
  );
}

/** Why a stalled move counts as stuck, for messages. */
export function stallReason(m: PartitionMoveStatus, probe: ProgressProbe | undefined, nowMs: number): string {
  const secs = Math.round(stalledForMs(m, nowMs) / 1000);
  const seen =
    probe === undefined
      ? "not asked"
      : probe.kind === "unreachable"
        ? `unreachable (${probe.error})`
        : probe.kind === "unknown"
          ? "knows no such move"
          : `${probe.state}, ${probe.copiedBytes ?? 0} bytes copied`;
  return `no progress on ${m.to} for ${secs}s (destination ${seen})`;
}

/**
 * The destination confirmed the cancel: it reports the move over, or knows
 * none. "done" counts too: the caller has already ruled out a swap of this
 * move, so a "done" there is an earlier move's of the same partition (seen
 * in the scale e2e: a partition moved to a member and back kept its old
 * "done", and the cancel, answered 409, could never change it); and were it
 * ours after all, nothing is left to cancel.
 */
export function cancelConfirmed(probe: ProgressProbe | undefined): boolean {
  if (probe === undefined) return false;
  if (probe.kind === "unknown") return true;
  return (
    probe.kind === "state" &&
    (probe.state === "cancelled" || probe.state === "failed" || probe.state === "done")
  );
}

/** Backoff before the next move of a partition aborted `attempts` times. */
export function retryDelayMs(attempts: number, t: MoveTiming): number {
  const n = Math.max(1, attempts);
  return Math.min(t.retryBackoffMaxMs, t.retryBackoffMs * 2 ** Math.min(n - 1, 20));
}

/** The retry entry after one more abort of the partition. */
export function nextRetry(
  prev: MoveRetry | undefined,
  m: PartitionMoveStatus,
  reason: string,
  nowMs: number,
  t: MoveTiming,
): MoveRetry {
  const attempts = (prev?.attempts ?? 0) + 1;
  return {
    topic: m.topic,
    partition: m.partition,
    attempts,
    notBefore: new Date(nowMs + retryDelayMs(attempts, t)).toISOString(),
    avoid: m.to,
    reason,
  };
}

/** True while the partition waits out its backoff. */
export function inBackoff(r: MoveRetry | undefined, nowMs: number): boolean {
  if (r === undefined) return false;
  const t = Date.parse(r.notBefore);
  return Number.isFinite(t) && nowMs < t;
}
