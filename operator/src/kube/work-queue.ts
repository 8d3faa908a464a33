import type { Clock, TimerHandle } from "./clock.ts";

// A keyed work queue in the client-go mould: we queue keys, not events, so N
// updates to one object cost one reconcile of its latest cached state.
//
// Invariants:
// - a key is at most once in the ready list (dedupe);
// - a key handed out by get() is not handed out again until done(); adds
//   while it is in flight are remembered (dirty) and re-queued at done();
// - waiting keys (ready + delayed) are bounded by maxKeys; an add beyond the
//   bound is dropped and reported, and the periodic resync re-adds it.

export interface WorkQueueOptions {
  clock: Clock;
  backoffBaseMs: number;
  backoffMaxMs: number;
  maxKeys: number;
  /** Called when an add is dropped because the queue is full (log it). */
  onDrop?: (key: string) => void;
  /** Called whenever the ready depth changes (metrics). */
  onDepth?: (depth: number) => void;
}

interface Delayed {
  at: number;
  timer: TimerHandle;
}

export class WorkQueue {
  readonly #opts: WorkQueueOptions;
  #ready: string[] = [];
  readonly #readySet = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #delayed = new Map<string, Delayed>();
  readonly #failures = new Map<string, number>();
  #waiters: Array<(key: string | undefined) => void> = [];
  #shutDown = false;

  constructor(opts: WorkQueueOptions) {
    this.#opts = opts;
  }

  get depth(): number {
    return this.#ready.length;
  }

  get shuttingDown(): boolean {
    return this.#shutDown;
  }

  /** Queue key now (deduplicated). */
  add(key: string): void {
    if (this.#shutDown) return;
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#readySet.has(key)) return;
    if (this.#waitingCount() >= this.#opts.maxKeys && !this.#delayed.has(key)) {
      this.#opts.onDrop?.(key);
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      this.#processing.add(key);
      waiter(key);
      return;
    }
    this.#ready.push(key);
    this.#readySet.add(key);
    this.#opts.onDepth?.(this.#ready.length);
  }

  /** Queue key after delayMs; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shutDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.#opts.clock.now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing !== undefined) {
      if (existing.at <= at) return;
      existing.timer.cancel();
    } else if (this.#waitingCount() >= this.#opts.maxKeys) {
      this.#opts.onDrop?.(key);
      return;
    }
    const timer = this.#opts.clock.after(delayMs, () => {
      this.#delayed.delete(key);
      this.add(key);
    });
    this.#delayed.set(key, { at, timer });
  }

  /** Queue key after its per-key exponential backoff (base doubling to the cap). */
  addRateLimited(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const delay = backoffMs(failures, this.#opts.backoffBaseMs, this.#opts.backoffMaxMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Reset key's failure count (after a successful reconcile). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Next key to process; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    const key = this.#ready.shift();
    if (key !== undefined) {
      this.#readySet.delete(key);
      this.#processing.add(key);
      this.#opts.onDepth?.(this.#ready.length);
      return Promise.resolve(key);
    }
    if (this.#shutDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Mark key finished; a key added while in flight is queued again now. */
  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.delete(key)) this.add(key);
  }

  /** Stop handing out keys: waiters get undefined, delayed keys are dropped. */
  shutDown(): void {
    this.#shutDown = true;
    for (const d of this.#delayed.values()) d.timer.cancel();
    this.#delayed.clear();
    this.#ready = [];
    this.#readySet.clear();
    this.#dirty.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w(undefined);
    this.#opts.onDepth?.(0);
  }

  #waitingCount(): number {
    return this.#readySet.size + this.#delayed.size;
  }
}

/** base * 2^(failures-1), capped. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  // Cap the exponent first so large failure counts cannot overflow to Infinity.
  const exp = Math.min(failures - 1, 40);
  return Math.min(baseMs * 2 ** exp, maxMs);
}
