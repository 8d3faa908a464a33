// Leader-side decisions of replication (ADR 0007): the high watermark, the
// acks=all answer, and the ISR changes the leader asks the operator's record
// for. Pure: the fetch handler and the status writer do the I/O.

import type { IsrMember } from "../../../packages/api/src/v1alpha1/replication.ts";

export interface FollowerProgress {
  member: string;
  /** The volume the follower fetches from (sent with every fetch). */
  volumeId: string;
  /** Its last fetch_offset: everything below is durable on it. */
  logEnd: number;
  /** When its fetch_offset last reached the leader's log end (ms). */
  caughtUpAtMs: number;
}

/** An ISR change the leader has asked for and whose outcome it does not know yet. */
export interface PendingIsrChange {
  isr: readonly IsrMember[];
}

export interface LeaderView {
  self: string;
  selfVolumeId: string;
  /** The leader's own durable (fsynced, verified) log end. */
  logEnd: number;
  /** The HWM so far: it never moves back. */
  hwm: number;
  /** The ISR as recorded in the NaradTopic status at this leader's epoch. */
  recordedIsr: readonly IsrMember[];
  /** A change in flight: it may have been recorded even if no answer came. */
  pending: PendingIsrChange | null;
  followers: ReadonlyMap<string, FollowerProgress>;
}

const key = (m: IsrMember): string => `${m.member}\u0000${m.volumeId}`;

/**
 * The members the HWM must wait for: the recorded ISR, plus every member of
 * a change in flight. Until the outcome is known the record may hold
 * either, and the next leader is elected from the record; so the HWM waits
 * for the union. A local ISR that is not recorded never shrinks this set.
 */
export function hwmMembers(v: Pick<LeaderView, "recordedIsr" | "pending">): IsrMember[] {
  const out = new Map<string, IsrMember>();
  for (const m of v.recordedIsr) out.set(key(m), m);
  for (const m of v.pending?.isr ?? []) out.set(key(m), m);
  return [...out.values()];
}

/**
 * HWM = the smallest durable log end over hwmMembers, never backwards. A
 * member whose progress is unknown (no fetch since this leader started) or
 * comes from another volume than its ISR entry holds the HWM where it is:
 * its entry says nothing about what that volume has.
 */
export function highWatermark(v: LeaderView): number {
  let low = v.logEnd;
  for (const m of hwmMembers(v)) {
    if (m.member === v.self) {
      if (m.volumeId !== v.selfVolumeId) return v.hwm;
      continue;
    }
    const f = v.followers.get(m.member);
    if (f === undefined || f.volumeId !== m.volumeId) return v.hwm;
    low = Math.min(low, f.logEnd);
  }
  return Math.max(v.hwm, low);
}

export type AckDecision =
  | { kind: "ack" }
  | { kind: "wait" }
  /** Retryable 503: fewer recorded in-sync replicas than min_insync_replicas. */
  | { kind: "refuse"; code: "not_enough_replicas"; message: string };

/**
 * The acks=all answer for a batch whose last offset is `lastOffset`: ack
 * once the HWM is above it and the recorded ISR has at least
 * `minInsync` members (it is then on each of them). The recorded set, not a
 * pending expansion, is counted: an expansion that fails would leave fewer
 * copies than the answer promised.
 */
export function ackDecision(input: {
  lastOffset: number;
  hwm: number;
  recordedIsrSize: number;
  minInsync: number;
}): AckDecision {
  if (input.recordedIsrSize < input.minInsync)
    return {
      kind: "refuse",
      code: "not_enough_replicas",
      message: `${input.recordedIsrSize} in-sync replica(s), min_insync_replicas is ${input.minInsync}`,
    };
  return input.hwm > input.lastOffset ? { kind: "ack" } : { kind: "wait" };
}

/** Whether an acks=all produce is taken at all (before appending): the same ISR rule. */
export function admitAcksAll(recordedIsrSize: number, minInsync: number): AckDecision | { kind: "admit" } {
  const d = ackDecision({ lastOffset: 0, hwm: 0, recordedIsrSize, minInsync });
  return d.kind === "refuse" ? d : { kind: "admit" };
}

/**
 * The follower progress after a fetch at `fetchOffset`: caught up when it
 * reached the leader's end (the replica_lag_ms clock restarts).
 */
export function recordFetch(
  prev: FollowerProgress | undefined,
  fetch: { member: string; volumeId: string; fetchOffset: number },
  leaderLogEnd: number,
  nowMs: number,
): FollowerProgress {
  const sameVolume = prev !== undefined && prev.volumeId === fetch.volumeId;
  const caughtUp = fetch.fetchOffset >= leaderLogEnd;
  return {
    member: fetch.member,
    volumeId: fetch.volumeId,
    logEnd: fetch.fetchOffset,
    caughtUpAtMs: caughtUp ? nowMs : sameVolume ? prev.caughtUpAtMs : Number.NEGATIVE_INFINITY,
  };
}

/**
 * The ISR change to ask for, or null. Shrink: a follower in the recorded
 * ISR that has not been caught up for `replicaLagMs` (or fetches from
 * another volume than its entry: its copy is gone). Expand: a replica
 * outside it whose durable end reached the HWM. One change at a time; none
 * while one is in flight.
 *
 * `leaderStartMs` is when this leader took over: a follower it has not
 * heard from counts as lagging from then.
 */
export function planIsrChange(input: {
  view: LeaderView;
  replicas: readonly string[];
  nowMs: number;
  replicaLagMs: number;
  leaderStartMs: number;
}): IsrMember[] | null {
  const { view } = input;
  if (view.pending !== null) return null;
  const hwm = highWatermark(view);
  const keep: IsrMember[] = [];
  let changed = false;
  for (const m of view.recordedIsr) {
    if (m.member === view.self) {
      keep.push(m);
      continue;
    }
    const f = view.followers.get(m.member);
    const since = f === undefined ? input.leaderStartMs : f.caughtUpAtMs;
    const foreign = f !== undefined && f.volumeId !== m.volumeId;
    if (foreign || input.nowMs - Math.max(since, input.leaderStartMs) >= input.replicaLagMs) changed = true;
    else keep.push(m);
  }
  if (changed) return keep;
  const inIsr = new Set(view.recordedIsr.map((m) => m.member));
  for (const r of input.replicas) {
    if (inIsr.has(r) || r === view.self) continue;
    const f = view.followers.get(r);
    if (f !== undefined && f.logEnd >= hwm) return [...view.recordedIsr, { member: r, volumeId: f.volumeId }];
  }
  return null;
}
