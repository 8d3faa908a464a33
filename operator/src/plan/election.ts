import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";

// Leader election for one replicated partition (ADR 0007 "Leadership").
// The operator computes the next record from the one it read; the caller
// writes it with a compare-and-swap on resourceVersion, so a decision made
// on a stale read fails and is made again on the fresh one. Pure.
//
// Rules:
// - only a member of the recorded ISR can lead (no unclean election: a
//   replica outside it may lack acknowledged records);
// - an ISR entry counts only while its member is not Down and still runs
//   on the volume the entry names (a member back on an empty or foreign
//   volume lacks what the entry vouches for);
// - every change of leader, including going offline, bumps leaderEpoch, so
//   the previous leader's fetches and writes are fenced;
// - the old leader leaves the ISR only if min_insync_replicas members stay:
//   the HWM cannot pass a member that does not fetch, so a Down leader kept
//   in the ISR still holds everything committed and can lead again when it
//   returns. Dropping it would leave one electable copy of records
//   committed on two.

export interface MemberHealth {
  down: boolean;
  /** The member's current volume identity; undefined when not known (treated as not matching). */
  volumeId: string | undefined;
}

export type ElectionDecision =
  | { kind: "keep" }
  | { kind: "elect"; next: ReplicaAssignment; reason: string }
  /** No live in-sync replica: leader null, the ISR kept so a returning member can lead again. */
  | { kind: "offline"; next: ReplicaAssignment; reason: string };

export function planElection(
  current: ReplicaAssignment,
  health: (member: string) => MemberHealth,
  minInsync: number,
): ElectionDecision {
  const valid = (m: IsrMember): boolean => {
    const h = health(m.member);
    return h.volumeId !== undefined && h.volumeId === m.volumeId;
  };
  const usable = (m: IsrMember): boolean => valid(m) && !health(m.member).down;
  const leaderEntry =
    current.leader === null ? undefined : current.isr.find((m) => m.member === current.leader);

  let reason: string | null = null;
  if (current.leader === null) reason = "offline";
  else if (leaderEntry === undefined) reason = `leader ${current.leader} is not in the ISR`;
  else if (!valid(leaderEntry)) reason = `leader ${current.leader} runs on another volume`;
  else if (health(current.leader).down) reason = `leader ${current.leader} is Down`;
  if (reason === null) return { kind: "keep" };

  // Entries of a volume that is gone are dropped: they vouch for nothing.
  // The old leader leaves the ISR; if it was only Down it rejoins by
  // truncating to the new leader's history and fetching.
  const kept = current.isr.filter((m) => valid(m));
  const order = [...current.replicas, ...current.isr.map((m) => m.member)];
  const candidate = order
    .map((id) => kept.find((m) => m.member === id))
    .find((m): m is IsrMember => m !== undefined && m.member !== current.leader && usable(m));
  if (candidate === undefined) {
    // A member that is only Down stays in the ISR: when it returns with its
    // volume it is the one replica known to hold everything acknowledged.
    const next = { ...current, leader: null, isr: kept, leaderEpoch: current.leaderEpoch + 1 };
    if (current.leader === null && sameIsr(kept, current.isr)) return { kind: "keep" };
    return { kind: "offline", next, reason: `${reason}; no live in-sync replica` };
  }
  const without = kept.filter((m) => m.member !== current.leader);
  return {
    kind: "elect",
    next: {
      ...current,
      leader: candidate.member,
      isr: without.length >= minInsync ? without : kept,
      leaderEpoch: current.leaderEpoch + 1,
    },
    reason: `${reason}; ${candidate.member} elected`,
  };
}

function sameIsr(a: readonly IsrMember[], b: readonly IsrMember[]): boolean {
  return (
    a.length === b.length && a.every((m, i) => m.member === b[i]?.member && m.volumeId === b[i]?.volumeId)
  );
}
