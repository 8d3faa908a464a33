// When a follower's retry loop logs (replication-io/replica-manager.ts): a
// leader that is down or deposed makes every retry (every 250 ms) fail the
// same way. The first failure of a kind is logged at once; the same kind
// again only once per interval, with how many were not logged since.

export class RepeatGate {
  readonly #intervalMs: number;
  #key: string | undefined;
  #loggedAtMs = 0;
  #skipped = 0;

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  /** Whether to log an event of `key` now; `repeated`: the same events not logged since the last one. */
  offer(key: string, nowMs: number): { log: boolean; repeated: number } {
    if (key !== this.#key || nowMs - this.#loggedAtMs >= this.#intervalMs) {
      const repeated = key === this.#key ? this.#skipped : 0;
      this.#key = key;
      this.#loggedAtMs = nowMs;
      this.#skipped = 0;
      return { log: true, repeated };
    }
    this.#skipped++;
    return { log: false, repeated: this.#skipped };
  }

  /** A success in between: the next failure is logged at once. */
  reset(): void {
    this.#key = undefined;
    this.#skipped = 0;
  }
}
