// A byte budget shared by requests, granted strictly first-in first-out.
// Pure bookkeeping: the caller supplies the clock reading and turns grants,
// expiries and refusals into promises and timers (admission/budget.ts).
//
// Why strict FIFO: a stream of small requests must not starve a large one
// that is already waiting, so a new request queues behind any waiter even
// when its own share would fit right now.

export type AcquireOutcome = "granted" | "queued" | "too_large";

interface Waiter {
  id: number;
  bytes: number;
  deadlineMs: number;
}

export class FifoBudget {
  readonly capacity: number;
  #used = 0;
  #waiting: Waiter[] = [];
  #head = 0;
  #waitingBytes = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError("capacity must be >= 1");
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }
  get waiters(): number {
    return this.#waiting.length - this.#head;
  }
  get waitingBytes(): number {
    return this.#waitingBytes;
  }

  /**
   * Takes `bytes` now, or queues request `id` until `deadlineMs`. A share larger
   * than the whole budget could never be granted, so it is refused outright.
   */
  acquire(id: number, bytes: number, deadlineMs: number): AcquireOutcome {
    if (bytes > this.capacity) return "too_large";
    if (this.waiters === 0 && this.#used + bytes <= this.capacity) {
      this.#used += bytes;
      return "granted";
    }
    this.#waiting.push({ id, bytes, deadlineMs });
    this.#waitingBytes += bytes;
    return "queued";
  }

  /** Returns `bytes` to the budget; answers the ids of waiters granted as a result, in order. */
  release(bytes: number): number[] {
    this.#used = Math.max(0, this.#used - bytes);
    return this.#grant();
  }

  /** Removes a waiter (it timed out or its client went away); may unblock the ones behind it. */
  cancel(id: number): { removed: boolean; granted: number[] } {
    for (let i = this.#head; i < this.#waiting.length; i++) {
      const w = this.#waiting[i]!;
      if (w.id !== id) continue;
      this.#waiting.splice(i, 1);
      this.#waitingBytes -= w.bytes;
      return { removed: true, granted: this.#grant() };
    }
    return { removed: false, granted: [] };
  }

  /** Removes every waiter whose deadline is at or before nowMs; answers their ids and any grants that follow. */
  expire(nowMs: number): { expired: number[]; granted: number[] } {
    const expired: number[] = [];
    const kept: Waiter[] = [];
    for (let i = this.#head; i < this.#waiting.length; i++) {
      const w = this.#waiting[i]!;
      if (w.deadlineMs <= nowMs) {
        expired.push(w.id);
        this.#waitingBytes -= w.bytes;
      } else kept.push(w);
    }
    if (expired.length === 0) return { expired, granted: [] };
    this.#waiting = kept;
    this.#head = 0;
    return { expired, granted: this.#grant() };
  }

  #grant(): number[] {
    const granted: number[] = [];
    while (this.#head < this.#waiting.length) {
      const w = this.#waiting[this.#head]!;
      if (this.#used + w.bytes > this.capacity) break;
      this.#used += w.bytes;
      this.#waitingBytes -= w.bytes;
      granted.push(w.id);
      this.#head++;
    }
    // Compact now and then so the array does not grow without bound.
    if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
      this.#waiting = this.#waiting.slice(this.#head);
      this.#head = 0;
    }
    return granted;
  }
}
