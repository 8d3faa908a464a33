// Fencing an idempotent producer across brokers (docs/adr/0008-producer-fence-lease.md),
// pure: the read lease on a broker's view of the producer registry and the
// re-init barrier's deadline and targets. No I/O; producers/registry.ts and
// node.ts act on the answers.
//
// The lease. A broker answers "is epoch E of producer P current?" from its
// view of the registry. A read of the store that STARTED at t (monotonic ms)
// returns every bump whose write completed before t (the store's read is a
// quorum read: kubernetes GET without a resourceVersion), so the view is
// good for decisions until t + leaseMs. A watch event does not extend it: an
// event says what the object was at some revision, never that no later
// revision exists (the watch may lag by any amount, or have stopped), so it
// is weaker than a read. It may still add epochs to the view (the view only
// grows), it just never makes the view trusted for longer.
//
// The barrier. A re-init that bumped an epoch answers once no broker can
// still decide with a view that lacks the bump: each broker either confirmed
// it holds the new epoch, or its lease has run out since the bump was
// written (every read that could have missed the bump started before the
// write completed, so its lease ends before completion + leaseMs). The
// initiator measures on its own monotonic clock, with an allowance for the
// other brokers' clocks running slower than its own.

import { clusterAddressOf, type MemberView } from "./routing.ts";

/** Clocks of two brokers may run at rates this far apart (5 %: far beyond quartz drift, room for VM clocks). */
export const fenceClockRateAllowance = 0.05;
/** Added to every barrier wait: the step between a broker's lease check and its decision, timer lateness. */
export const fenceFixedMarginMs = 50;

export interface LeaseState {
  /** Start (monotonic ms) of the latest successful read of the store that counts; -Infinity: none. */
  readStartedAt: number;
  /** Reads that started before this instant do not count (the lease was expired on purpose). */
  trustFrom: number;
}

export const noLease = (): LeaseState => ({
  readStartedAt: Number.NEGATIVE_INFINITY,
  trustFrom: Number.NEGATIVE_INFINITY,
});

/** Until when the view may be used for an epoch decision; -Infinity when no read counts. */
export function leaseValidUntil(s: LeaseState, leaseMs: number): number {
  if (s.readStartedAt < s.trustFrom) return Number.NEGATIVE_INFINITY;
  return s.readStartedAt + leaseMs;
}

/** The state after a successful read that started at `startedAt` (reads may finish out of order). */
export function afterRead(s: LeaseState, startedAt: number): LeaseState {
  if (startedAt <= s.readStartedAt) return s;
  return { ...s, readStartedAt: startedAt };
}

/** The state after the lease is expired on purpose at `now`: only reads that start from now on count. */
export function expired(s: LeaseState, now: number): LeaseState {
  return { ...s, trustFrom: Math.max(s.trustFrom, now) };
}

export type LeaseDecision =
  /** Decide from the view. */
  | "valid"
  /** Decide from the view, and start a read in the background: the lease is in its last quarter. */
  | "valid-refresh"
  /** Read the store first (or refuse the request when the read fails). */
  | "read";

/**
 * Whether a decision at `now` may use the view. `trusted` false (this broker
 * is not in its own member list yet, so the barrier may not have asked it)
 * means every decision reads.
 */
export function leaseDecision(
  s: LeaseState,
  now: number,
  leaseMs: number,
  trusted: boolean,
  readInFlight: boolean,
): LeaseDecision {
  if (!trusted) return "read";
  const until = leaseValidUntil(s, leaseMs);
  if (now >= until) return "read";
  if (!readInFlight && until - now < leaseMs / 4) return "valid-refresh";
  return "valid";
}

/**
 * After a read of the store failed, decisions that need a read are refused
 * without another one for this long (up to 1 s, the Retry-After of the
 * refusal; a quarter of the lease when that is shorter). Refusing is always
 * safe; reading again for every refused request and every retried commit
 * would multiply the load on a store that is already failing.
 */
export function readFailureHoldMs(leaseMs: number): number {
  return Math.min(1_000, Math.floor(leaseMs / 4));
}

/** How long after the bump's write completed the barrier waits when not every member confirmed. */
export function barrierWaitMs(leaseMs: number): number {
  return Math.ceil(leaseMs * (1 + fenceClockRateAllowance)) + fenceFixedMarginMs;
}

/** The barrier's deadline, from the moment (initiator's monotonic ms) the bump was known durable. */
export function barrierDeadline(durableAt: number, leaseMs: number): number {
  return durableAt + barrierWaitMs(leaseMs);
}

export interface ConfirmPlan {
  /** Cluster addresses of every other member that may still decide (all but Removed). */
  addresses: string[];
  /**
   * False when some such member cannot be asked (no address yet): only the
   * lease covers it, so confirmations cannot end the barrier early.
   */
  complete: boolean;
}

/**
 * Whom the barrier asks. Every member but this one and Removed ones: a Down
 * member may be alive behind a partition and still own partitions in its
 * own (stale) view, so it is asked too; if it does not answer, the lease
 * covers it. Joining, Maintenance and Decommissioning members may all decide.
 */
export function confirmTargets(members: readonly MemberView[], selfId: string): ConfirmPlan {
  const addresses: string[] = [];
  let complete = true;
  for (const m of members) {
    if (m.id === selfId || m.state === "Removed") continue;
    const address = clusterAddressOf(m);
    if (address === undefined) complete = false;
    else addresses.push(address);
  }
  return { addresses, complete };
}

export interface ConfirmAnswer {
  /** The epoch the member now holds for the producer. */
  epoch: number;
  /** The member's membership epoch (0 when it has none). */
  membershipEpoch: number;
}

/**
 * Whether the confirmations end the barrier early: the plan was complete,
 * every member answered with at least `epoch`, no member knows a newer
 * membership than the one the plan came from (else the initiator's member
 * list may lack a broker), and that membership did not change meanwhile.
 */
export function confirmedByAll(
  plan: ConfirmPlan,
  answers: ReadonlyArray<ConfirmAnswer | undefined>,
  epoch: number,
  membershipBefore: number,
  membershipAfter: number,
): boolean {
  if (!plan.complete || answers.length !== plan.addresses.length) return false;
  if (membershipAfter !== membershipBefore) return false;
  for (const a of answers) {
    if (a === undefined || a.epoch < epoch || a.membershipEpoch > membershipBefore) return false;
  }
  return true;
}
