// The queue state of one (topic, partition, group): which offsets are
// leased, settled or waiting for redelivery. Pure and synchronous; the
// caller passes the clock, the high-watermark and the topic's limits.
//
// Invariants (checked by the unit tests after every step):
//   - everything below `committed` is settled (acked, corrupt or retention-expired);
//   - every offset in [committed, nextFresh) is exactly one of: leased,
//     acked-ahead, corrupt, or waiting in the redelivery heap;
//   - every offset >= nextFresh has never been handed out since open;
//   - leased + waiting-for-redelivery <= max_in_flight at the time they were
//     leased (a fresh offset is only handed out when nothing waits);
//   - acked-ahead + corrupt <= max_acked_ahead, except for corrupt offsets
//     found while reading (skipping them is never refused).
// So the lowest free offset is min(redelivery heap, nextFresh): O(log n).

import { LeaseHeap, OffsetHeap } from "./consumer-heap.ts";

export interface QueueLimits {
  maxInFlight: number;
  maxAckedAhead: number;
  visibilityTimeoutMs: number;
}

export interface Lease {
  offset: number;
  nonce: number;
  expiresAtMs: number;
  heapIndex: number;
}

export type LeaseResult =
  | { kind: "leased"; offset: number; nonce: number; expiresAtMs: number; redelivery: boolean }
  /** Nothing free below the HWM. */
  | { kind: "empty" }
  /** max_in_flight leases are out. */
  | { kind: "in-flight-full" }
  /** The acked-ahead set is full and the frontier offset is not free. */
  | { kind: "acked-ahead-full" };

export type AckResult = "acked" | "stale" | "acked-ahead-full";

export interface QueueStats {
  committed: number;
  inFlight: number;
  ackedAhead: number;
  corrupt: number;
  waitingRedelivery: number;
}

/**
 * Advances a frontier over the contiguous run of settled offsets starting at
 * it, removing them from the sets. Bounded by the sets' sizes.
 */
export function advanceFrontier(committed: number, settled: readonly Set<number>[]): number {
  let c = committed;
  for (;;) {
    const set = settled.find((s) => s.has(c));
    if (set === undefined) return c;
    set.delete(c);
    c++;
  }
}

export class ConsumerQueueState {
  #committed: number;
  #nextFresh: number;
  #nonce = 0;
  readonly #nextNonce: () => number;
  readonly #leases = new Map<number, Lease>();
  readonly #byExpiry = new LeaseHeap<Lease>();
  readonly #redeliver = new OffsetHeap();
  readonly #ackedAhead = new Set<number>();
  readonly #corrupt = new Set<number>();

  /**
   * `nextNonce` picks each lease's nonce (the part of a receipt handle that
   * proves it was handed out): the broker passes a random source, so handles
   * cannot be forged from a known one; the default counter keeps tests exact.
   */
  constructor(committed: number, nextNonce?: () => number) {
    if (!Number.isSafeInteger(committed) || committed < 0) throw new RangeError("bad committed offset");
    this.#nextNonce = nextNonce ?? (() => ++this.#nonce);
    this.#committed = committed;
    this.#nextFresh = committed;
  }

  get committed(): number {
    return this.#committed;
  }

  stats(): QueueStats {
    return {
      committed: this.#committed,
      inFlight: this.#leases.size,
      ackedAhead: this.#ackedAhead.size,
      corrupt: this.#corrupt.size,
      waitingRedelivery: this.#redeliver.size,
    };
  }

  /** Releases expired leases for redelivery; returns how many. */
  purge(nowMs: number): number {
    let n = 0;
    for (let top = this.#byExpiry.peek(); top !== undefined && top.expiresAtMs <= nowMs; ) {
      this.#byExpiry.pop();
      this.#leases.delete(top.offset);
      this.#redeliver.push(top.offset);
      n++;
      top = this.#byExpiry.peek();
    }
    return n;
  }

  /**
   * Moves the frontier up to `oldest` when retention removed offsets nobody
   * acked; returns how many offsets were skipped.
   */
  skipTo(oldest: number): number {
    if (oldest <= this.#committed) return 0;
    const skipped = oldest - this.#committed;
    for (const lease of [...this.#leases.values()]) {
      if (lease.offset < oldest) this.#drop(lease);
    }
    for (const set of [this.#ackedAhead, this.#corrupt])
      for (const o of [...set]) if (o < oldest) set.delete(o);
    this.#committed = oldest;
    this.#nextFresh = Math.max(this.#nextFresh, oldest);
    this.#dropRedeliverBelowFrontier();
    this.#advance();
    return skipped;
  }

  /** Leases the lowest free offset in [committed, hwm), subject to the caps. */
  lease(nowMs: number, hwm: number, limits: QueueLimits): LeaseResult {
    if (this.#leases.size >= limits.maxInFlight) return { kind: "in-flight-full" };
    this.#dropRedeliverBelowFrontier();
    const waiting = this.#redeliver.peek();
    const candidate = waiting ?? this.#nextFresh;
    if (candidate >= hwm) return { kind: "empty" };
    if (this.#aheadFull(limits) && candidate !== this.#committed) return { kind: "acked-ahead-full" };
    if (waiting !== undefined) this.#redeliver.pop();
    else this.#nextFresh++;
    const lease: Lease = {
      offset: candidate,
      nonce: this.#nextNonce(),
      expiresAtMs: nowMs + limits.visibilityTimeoutMs,
      heapIndex: -1,
    };
    this.#leases.set(candidate, lease);
    this.#byExpiry.push(lease);
    return {
      kind: "leased",
      offset: candidate,
      nonce: lease.nonce,
      expiresAtMs: lease.expiresAtMs,
      redelivery: waiting !== undefined,
    };
  }

  /** Acks a live lease: advances the frontier at it, parks it ahead otherwise. */
  ack(offset: number, nonce: number, limits: QueueLimits): AckResult {
    const lease = this.#live(offset, nonce);
    if (lease === undefined) return "stale";
    if (offset !== this.#committed && this.#aheadFull(limits)) return "acked-ahead-full";
    this.#drop(lease);
    this.#ackedAhead.add(offset);
    this.#advance();
    return "acked";
  }

  /** Pushes a live lease's expiry to now + visibility. */
  extend(offset: number, nonce: number, nowMs: number, limits: QueueLimits): boolean {
    const lease = this.#live(offset, nonce);
    if (lease === undefined) return false;
    lease.expiresAtMs = nowMs + limits.visibilityTimeoutMs;
    this.#byExpiry.update(lease);
    return true;
  }

  /** Releases a live lease for immediate redelivery. */
  nack(offset: number, nonce: number): boolean {
    const lease = this.#live(offset, nonce);
    if (lease === undefined) return false;
    this.#drop(lease);
    this.#redeliver.push(offset);
    return true;
  }

  /**
   * The leased `offset` turned out unreadable (a corrupt frame was skipped;
   * the log's next record is at `nextReadable`). Settles it, and every
   * never-handed-out offset below nextReadable, as corrupt.
   */
  markCorrupt(offset: number, nonce: number, nextReadable: number): void {
    const lease = this.#live(offset, nonce);
    if (lease === undefined) return;
    this.#drop(lease);
    this.#corrupt.add(offset);
    for (let o = Math.max(this.#nextFresh, offset + 1); o < nextReadable; o++) this.#corrupt.add(o);
    this.#nextFresh = Math.max(this.#nextFresh, nextReadable);
    this.#advance();
  }

  isLive(offset: number, nonce: number): boolean {
    return this.#live(offset, nonce) !== undefined;
  }

  #live(offset: number, nonce: number): Lease | undefined {
    const lease = this.#leases.get(offset);
    return lease !== undefined && lease.nonce === nonce ? lease : undefined;
  }

  #drop(lease: Lease): void {
    this.#leases.delete(lease.offset);
    this.#byExpiry.remove(lease);
  }

  #aheadFull(limits: QueueLimits): boolean {
    return this.#ackedAhead.size + this.#corrupt.size >= limits.maxAckedAhead;
  }

  #advance(): void {
    this.#committed = advanceFrontier(this.#committed, [this.#ackedAhead, this.#corrupt]);
  }

  #dropRedeliverBelowFrontier(): void {
    for (let top = this.#redeliver.peek(); top !== undefined && top < this.#committed; ) {
      this.#redeliver.pop();
      top = this.#redeliver.peek();
    }
  }
}
