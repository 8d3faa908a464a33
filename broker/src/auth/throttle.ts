// Failed-login throttle per username, pure (the caller passes the clock):
// the first 5 failures are free, after that one attempt per 12 s is let
// through to the password check and the rest are refused (429) without
// checking anything, so guessing a password costs 12 s per try. A success
// clears the entry; an entry with no failure for 60 s expires. The table is
// bounded (oldest entries go first), so random usernames cannot grow it
// without limit.

export interface ThrottleOptions {
  freeFailures: number;
  intervalMs: number;
  forgetAfterMs: number;
  maxEntries: number;
}

export const defaultThrottle: ThrottleOptions = {
  freeFailures: 5,
  intervalMs: 12_000,
  forgetAfterMs: 60_000,
  maxEntries: 10_000,
};

interface Entry {
  failures: number;
  /** When the last attempt was let through to the check (ms). */
  lastAttemptMs: number;
  lastFailureMs: number;
}

export type ThrottleDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

export class LoginThrottle {
  readonly #o: ThrottleOptions;
  readonly #entries = new Map<string, Entry>();

  constructor(options: ThrottleOptions = defaultThrottle) {
    this.#o = options;
  }

  /** Before checking a password: may this attempt for `user` go ahead? Records the attempt if so. */
  begin(user: string, nowMs: number): ThrottleDecision {
    const e = this.#live(user, nowMs);
    if (e === undefined || e.failures < this.#o.freeFailures) {
      if (e !== undefined) e.lastAttemptMs = nowMs;
      return { allowed: true };
    }
    const next = e.lastAttemptMs + this.#o.intervalMs;
    if (nowMs < next) return { allowed: false, retryAfterMs: next - nowMs };
    e.lastAttemptMs = nowMs;
    return { allowed: true };
  }

  failed(user: string, nowMs: number): void {
    let e = this.#live(user, nowMs);
    if (e === undefined) {
      e = { failures: 0, lastAttemptMs: nowMs, lastFailureMs: nowMs };
      this.#entries.set(user, e);
      if (this.#entries.size > this.#o.maxEntries) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
    }
    e.failures++;
    e.lastFailureMs = nowMs;
    e.lastAttemptMs = nowMs;
  }

  succeeded(user: string): void {
    this.#entries.delete(user);
  }

  get size(): number {
    return this.#entries.size;
  }

  #live(user: string, nowMs: number): Entry | undefined {
    const e = this.#entries.get(user);
    if (e !== undefined && nowMs - e.lastFailureMs >= this.#o.forgetAfterMs) {
      this.#entries.delete(user);
      return undefined;
    }
    return e;
  }
}
