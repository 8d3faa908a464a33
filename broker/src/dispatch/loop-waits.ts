// The waits around the dispatcher loop: its sleep between passes, which new
// durable records (or a drain) can cut short, and the drain() callers, who
// wait until nothing is pending.

/** The loop's sleep between passes; at most one at a time. */
export class LoopSleep {
  #durableSinceSleep = false;
  #sleeper: { timer: NodeJS.Timeout; wakeOnDurable: boolean; wake: () => void } | null = null;

  /** A pass starts: only records made durable from now on cut the next sleep short. */
  passStarting(): void {
    this.#durableSinceSleep = false;
  }

  /** Sleeps `ms`; with wakeOnDurable, new durable records end it (or skip it if they came during the pass). */
  sleep(ms: number, wakeOnDurable: boolean): Promise<void> {
    if (wakeOnDurable && this.#durableSinceSleep) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        if (this.#sleeper === null) return;
        clearTimeout(this.#sleeper.timer);
        this.#sleeper = null;
        resolve();
      };
      this.#sleeper = { timer: setTimeout(wake, ms), wakeOnDurable, wake };
    });
  }

  /** The WAL made new records durable. */
  readonly onDurable = (): void => {
    this.#durableSinceSleep = true;
    this.wakeIfWaitingForRecords();
  };

  /** Ends a sleep that new records would end (not a backoff). */
  wakeIfWaitingForRecords(): void {
    if (this.#sleeper?.wakeOnDurable) this.#sleeper.wake();
  }

  /** Ends any sleep (stop). */
  wake(): void {
    this.#sleeper?.wake();
  }
}

/** drain() callers: resolved true once nothing is pending, false at their timeout or a stop with records left. */
export class DrainWaiters {
  readonly #waiters = new Set<{ timer: NodeJS.Timeout; resolve: (ok: boolean) => void }>();
  readonly #pending: () => number;

  constructor(pending: () => number) {
    this.#pending = pending;
  }

  /** Waits for nothing pending (the caller checked that something is). */
  wait(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const w = {
        timer: setTimeout(() => {
          this.#waiters.delete(w);
          resolve(false);
        }, timeoutMs),
        resolve,
      };
      this.#waiters.add(w);
    });
  }

  /** After a pass: resolves every waiter if nothing is pending now. */
  settle(): void {
    if (this.#waiters.size === 0 || this.#pending() > 0) return;
    this.#endAll(true);
  }

  /** The loop stopped: every waiter learns whether anything is still pending. */
  stop(): void {
    this.#endAll(this.#pending() === 0);
  }

  #endAll(ok: boolean): void {
    for (const w of this.#waiters) {
      clearTimeout(w.timer);
      w.resolve(ok);
    }
    this.#waiters.clear();
  }
}
