// The node's produce memory budget as promises and timers around the pure
// FifoBudget (core/fifo-budget.ts). A produce takes its share before its
// body is read and gives it back once the node is done with those bytes;
// a waiter that is not granted within the timeout gets 429 + Retry-After.

import { FifoBudget } from "../core/fifo-budget.ts";
import { NaradError } from "../errors.ts";

export interface AdmissionSink {
  /** Bytes granted and not yet released, and requests waiting. */
  state(usedBytes: number, waiters: number): void;
  waited(seconds: number): void;
  rejected(reason: "timeout" | "too_large"): void;
}

export interface Lease {
  readonly bytes: number;
  /** Gives the share back; later calls do nothing. */
  release(): void;
}

interface Pending {
  bytes: number;
  startMs: number;
  timer: NodeJS.Timeout;
  resolve(lease: Lease): void;
  reject(err: NaradError): void;
}

export interface AdmissionOptions {
  capacityBytes: number;
  timeoutMs: number;
  now?: () => number;
  sink?: AdmissionSink;
}

export class AdmissionBudget {
  readonly capacityBytes: number;
  readonly timeoutMs: number;
  readonly #budget: FifoBudget;
  readonly #pending = new Map<number, Pending>();
  readonly #now: () => number;
  readonly #sink: AdmissionSink | undefined;
  #nextId = 1;

  constructor(opts: AdmissionOptions) {
    this.capacityBytes = opts.capacityBytes;
    this.timeoutMs = opts.timeoutMs;
    this.#budget = new FifoBudget(opts.capacityBytes);
    this.#now = opts.now ?? Date.now;
    this.#sink = opts.sink;
    this.#report();
  }

  get usedBytes(): number {
    return this.#budget.used;
  }
  get waiters(): number {
    return this.#budget.waiters;
  }

  /**
   * A lease for `bytes`: `now` when the budget has room and nobody waits
   * (no promise, the common case), else `wait`, which rejects with 429 +
   * Retry-After when not granted within the timeout; `cancel` withdraws a
   * waiter whose client went away. Throws 413 when the share exceeds the
   * whole budget.
   */
  acquire(bytes: number): { now: Lease } | { wait: Promise<Lease>; cancel(): void } {
    const id = this.#nextId++;
    const start = this.#now();
    const outcome = this.#budget.acquire(id, bytes, start + this.timeoutMs);
    if (outcome === "too_large") {
      this.#sink?.rejected("too_large");
      const err = new NaradError(
        "PAYLOAD_TOO_LARGE",
        `request needs ${bytes} bytes of the produce memory budget but the whole budget is ${this.capacityBytes} bytes`,
      );
      throw err;
    }
    if (outcome === "granted") {
      this.#report();
      this.#sink?.waited(0);
      return { now: this.#lease(bytes) };
    }
    const lease = new Promise<Lease>((resolve, reject) => {
      const timer = setTimeout(() => this.#timeout(id), this.timeoutMs);
      timer.unref();
      this.#pending.set(id, { bytes, startMs: start, timer, resolve, reject });
    });
    this.#report();
    return { wait: lease, cancel: () => this.#cancel(id) };
  }

  #lease(bytes: number): Lease {
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        this.#wake(this.#budget.release(bytes));
      },
    };
  }

  #wake(granted: number[]): void {
    const now = this.#now();
    for (const id of granted) {
      const p = this.#pending.get(id);
      if (p === undefined) continue;
      this.#pending.delete(id);
      clearTimeout(p.timer);
      this.#sink?.waited((now - p.startMs) / 1000);
      p.resolve(this.#lease(p.bytes));
    }
    this.#report();
  }

  #timeout(id: number): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    const { granted } = this.#budget.cancel(id);
    this.#sink?.rejected("timeout");
    p.reject(
      new NaradError(
        "TOO_MANY_REQUESTS",
        `the produce memory budget (${this.capacityBytes} bytes) stayed full for ${this.timeoutMs} ms; retry later`,
        // The budget drains at disk speed, so a retry soon after is reasonable.
        { retryAfterSeconds: 1 },
      ),
    );
    this.#wake(granted);
  }

  #cancel(id: number): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    // Nobody awaits this any more; settle it so the promise is not left dangling.
    p.reject(new NaradError("BAD_REQUEST", "client went away while waiting for admission"));
    this.#wake(this.#budget.cancel(id).granted);
  }

  #report(): void {
    this.#sink?.state(this.#budget.used, this.#budget.waiters);
  }
}
