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
  /** When it was last caught up (ms); see recordFetch. */
  caughtUpAtMs: number;
  /** The leader's durable end when it answered this follower's last fetch. */
  leaderEndAtFetch: number;
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
  /**
   * This leader's log end when it took over: its epoch's start when newly
   * elected, its log end at restart when back in its own epoch (it may have
   * acknowledged records above the epoch's start before the crash).
   */
  epochStartOffset: number;
  /** The ISR as recorded in the NaradTopic status at this leader's epoch. */
  recordedIsr: readonly IsrMember[];
  /** The topic's min_insync_replicas. */
  minInsync: number;
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
 * HWM = the smallest durable log end over hwmMembers, never backwards, and
 * it moves only while the recorded ISR has min_insync_replicas members: a
 * record below the HWM is then on at least that many copies, each one
 * electable. (Advancing with a smaller ISR would expose, and commit
 * dispatched records, on fewer copies than the topic promises.) A member
 * whose progress is unknown (no fetch since this leader started) or comes
 * from another volume than its ISR entry holds the HWM where it is: its
 * entry says nothing about what that volume has.
 */
export function highWatermark(v: LeaderView): number {
  if (v.recordedIsr.length < v.minInsync) return v.hwm;
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
 * The follower progress after a fetch at `fetchOffset`. It is caught up
 * (the replica_lag_ms clock restarts) when it reached the leader's end as
 * of its previous fetch: under steady produce a follower one batch behind
 * is as current as the protocol allows, and demanding the leader's end of
 * this instant would shrink a healthy ISR.
 */
export function recordFetch(
  prev: FollowerProgress | undefined,
  fetch: { member: string; volumeId: string; fetchOffset: number },
  leaderLogEnd: number,
  nowMs: number,
): FollowerProgress {
  const sameVolume = prev !== undefined && prev.volumeId === fetch.volumeId;
  const target = sameVolume ? Math.min(leaderLogEnd, prev.leaderEndAtFetch) : leaderLogEnd;
  const caughtUp = fetch.fetchOffset >= target;
  return {
    member: fetch.member,
    volumeId: fetch.volumeId,
    logEnd: fetch.fetchOffset,
    caughtUpAtMs: caughtUp ? nowMs : sameVolume ? prev.caughtUpAtMs : Number.NEGATIVE_INFINITY,
    leaderEndAtFetch: leaderLogEnd,
  };
}

/**
 * The ISR change to ask for, or null. Shrink: a follower in the recorded
 * ISR that has not been caught up for `replicaLagMs`, but never below
 * min_insync_replicas: below it the HWM stops anyway, and a lagging member
 * kept in the ISR still holds everything committed, so it stays electable
 * (the least lagging are kept). A follower that fetches from another
 * volume than its entry is always removed: its copy is gone. Expand: a
 * replica outside the ISR whose durable end reached the HWM and the start
 * of this leader's epoch, and that is caught up now by the shrink's own
 * clock (caught up within replicaLagMs): progress is the last fetch heard,
 * and a follower that died holds its last fetch offset for ever, which
 * the HWM reaches once the shrink stops waiting for it; adding it back
 * would stall every commit again until the next shrink (a loop the
 * replication e2e saw: shrink, expand with the dead follower's old volume,
 * shrink, ...). The HWM alone is not enough: a leader that
 * restarted, or was just elected, may know a lower HWM than the one its
 * predecessor (or it, before a crash) acknowledged up to (the HWM file is
 * written lazily), and a replica added at that HWM would lack acknowledged
 * records. Everything acknowledged is below this leader's log end when it
 * took over (`epochStartOffset`), which every ISR member had or gets before
 * anything above it commits. One change at a time; none while one is in
 * flight.
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
  const lagging: Array<{ m: IsrMember; logEnd: number }> = [];
  let foreign = false;
  for (const m of view.recordedIsr) {
    if (m.member === view.self) {
      keep.push(m);
      continue;
    }
    const f = view.followers.get(m.member);
    if (f !== undefined && f.volumeId !== m.volumeId) {
      foreign = true;
      continue;
    }
    const since = f === undefined ? input.leaderStartMs : f.caughtUpAtMs;
    if (input.nowMs - Math.max(since, input.leaderStartMs) >= input.replicaLagMs)
      lagging.push({ m, logEnd: f?.logEnd ?? -1 });
    else keep.push(m);
  }
  lagging.sort((a, b) => b.logEnd - a.logEnd);
  const refill = lagging.slice(0, Math.max(0, view.minInsync - keep.length)).map((x) => x.m);
  if (foreign || refill.length < lagging.length) {
    const kept = new Set([...keep, ...refill]);
    return view.recordedIsr.filter((m) => kept.has(m));
  }
  const inIsr = new Set(view.recordedIsr.map((m) => m.member));
  for (const r of input.replicas) {
    if (inIsr.has(r) || r === view.self) continue;
    const f = view.followers.get(r);
    if (
      f !== undefined &&
      f.logEnd >= Math.max(hwm, view.epochStartOffset) &&
      input.nowMs - f.caughtUpAtMs < input.replicaLagMs
    )
      return [...view.recordedIsr, { member: r, volumeId: f.volumeId }];
  }
  return null;
}
