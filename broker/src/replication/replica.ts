// Follower-side decisions of replication (ADR 0007): epoch fencing, the
// truncation of a returning replica, and what a follower may expose. Pure:
// the fetch loop and the log do the I/O.

import {
  type EpochEnd,
  type EpochHistory,
  lastEpoch,
  NO_EPOCH,
  offsetForLeaderEpoch,
} from "./epoch-history.ts";

export type FenceResult =
  | { ok: true; knownEpoch: number }
  /** The request comes from a deposed leader's epoch (or a follower that missed the election). */
  | { ok: false; code: "fenced_leader_epoch"; knownEpoch: number }
  /** The request is from a newer epoch than this leader's: it has been deposed and must not answer. */
  | { ok: false; code: "unknown_leader_epoch"; knownEpoch: number };

/**
 * Fencing on a replica (follower side: appends, truncation requests): a
 * lower epoch is refused, a higher one becomes the known epoch (persisted by
 * the caller before it acts on it).
 */
export function fenceReplica(knownEpoch: number, requestEpoch: number): FenceResult {
  if (requestEpoch < knownEpoch) return { ok: false, code: "fenced_leader_epoch", knownEpoch };
  return { ok: true, knownEpoch: requestEpoch };
}

/**
 * Fencing on a leader answering a fetch: only its own epoch is served. A
 * higher epoch means another leader was elected; answering it would let the
 * deposed leader's HWM advance on a follower that already moved on.
 */
export function fenceLeader(leaderEpoch: number, requestEpoch: number): FenceResult {
  if (requestEpoch < leaderEpoch) return { ok: false, code: "fenced_leader_epoch", knownEpoch: leaderEpoch };
  if (requestEpoch > leaderEpoch) return { ok: false, code: "unknown_leader_epoch", knownEpoch: leaderEpoch };
  return { ok: true, knownEpoch: leaderEpoch };
}

export interface ReplicaLog {
  logEnd: number;
  /** The highest HWM this replica has learned (and persisted): everything below it is acknowledged-safe. */
  hwm: number;
  history: EpochHistory;
}

export type TruncationStep =
  /** Truncate to `truncateTo` (a no-op when equal to logEnd), then fetch from there. */
  | { kind: "follow"; truncateTo: number }
  /** Truncate to `truncateTo`, then ask OffsetForLeaderEpoch again with the new last epoch. */
  | { kind: "truncate-and-ask"; truncateTo: number }
  /** The answer would cut below the known HWM: an acknowledged record would go. Never done. */
  | { kind: "refuse"; truncateTo: number; reason: string };

/** The epoch a returning replica asks the leader about (its last), or NO_EPOCH for an empty log. */
export function truncationQuery(log: ReplicaLog): number {
  return lastEpoch(log.history);
}

/**
 * One round of epoch-based truncation. `answer` is the leader's
 * OffsetForLeaderEpoch(asked). When the leader knows the asked epoch, the
 * replica's log agrees with it below the answer's end. When the leader
 * only knows an older epoch E', the replica cuts to where both logs end E'
 * and asks again: its last epoch drops each round, so this terminates.
 */
export function planTruncation(log: ReplicaLog, asked: number, answer: EpochEnd): TruncationStep {
  let to: number;
  let again = false;
  if (log.history.length === 0 || asked === NO_EPOCH) {
    to = Math.min(log.logEnd, answer.endOffset);
  } else if (answer.epoch === asked) {
    to = Math.min(log.logEnd, answer.endOffset);
  } else {
    const own = offsetForLeaderEpoch(log.history, log.logEnd, answer.epoch);
    to = Math.min(log.logEnd, answer.endOffset, own.endOffset);
    again = answer.epoch !== NO_EPOCH && to > 0;
  }
  if (to < log.hwm)
    return {
      kind: "refuse",
      truncateTo: to,
      reason: `truncation to ${to} would drop records below the known high watermark ${log.hwm}`,
    };
  return again ? { kind: "truncate-and-ask", truncateTo: to } : { kind: "follow", truncateTo: to };
}

/**
 * The HWM a follower keeps after a fetch answer: never above its own
 * durable end nor the leader's HWM, never backwards (a new leader may
 * start with a lower HWM than its predecessor told us; what was below the
 * old one is on every in-sync replica anyway).
 */
export function followerHwm(known: number, leaderHwm: number, durableEnd: number): number {
  return Math.max(known, Math.min(leaderHwm, durableEnd));
}

/** How far a follower may serve reads: its HWM, never its log end. */
export function followerVisibleEnd(log: Pick<ReplicaLog, "logEnd" | "hwm">): number {
  return Math.min(log.logEnd, log.hwm);
}
