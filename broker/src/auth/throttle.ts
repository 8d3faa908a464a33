// Failed-login throttle, pure (the caller passes the clock). Keyed by
// whatever the caller chooses; the authenticator uses (username, client
// address), so a stranger guessing "admin" from one address slows down that
// address, not the admin's own new logins from elsewhere.
//
// Every attempt is counted when it BEGINS, before the password is hashed:
// concurrent guesses cannot all slip through while the first hash is still
// running. A success clears the entry. The first `freeFailures` attempts are
// free; after that one attempt per `intervalMs` is let through and the rest
// are refused (429) without hashing anything. An entry with no attempt for
// `forgetAfterMs` expires.
//
// The table is bounded, and eviction can never reset a throttled key: when
// it is full, expired entries go first, then the oldest entry still in its
// free allowance; if every entry is throttled, a new key is refused as
// throttled itself (fail closed) until some entry expires. One client
// address may hold at most `maxEntriesPerClient` entries: before, one
// address cycling through 2,000 made-up usernames x 5 attempts (cheap: an
// attempt refused as `busy` by the full hash queue was still counted) filled
// the table with throttled keys and locked every other user out of a new
// login for as long as it kept going. Beyond its share a client's new keys
// are refused as `table_full`, for that address only.

export interface ThrottleOptions {
  freeFailures: number;
  intervalMs: number;
  forgetAfterMs: number;
  maxEntries: number;
  /** Entries one client address may hold (a key's address: `begin`'s third argument). */
  maxEntriesPerClient?: number;
}

export const defaultThrottle: ThrottleOptions = {
  freeFailures: 5,
  intervalMs: 12_000,
  forgetAfterMs: 60_000,
  maxEntries: 10_000,
  maxEntriesPerClient: 100,
};

interface Entry {
  /** Attempts begun and not cleared by a success. */
  attempts: number;
  /** When the last attempt was let through (ms). */
  lastAttemptMs: number;
  client: string;
}

export type ThrottleDecision =
  | { allowed: true }
  | { allowed: false; retryAfterMs: number; reason: "throttled" | "table_full" };

export class LoginThrottle {
  readonly #o: ThrottleOptions;
  /** Insertion order = order of last attempt (re-inserted on every attempt). */
  readonly #entries = new Map<string, Entry>();
  /** Entries per client address. */
  readonly #perClient = new Map<string, number>();

  constructor(options: ThrottleOptions = defaultThrottle) {
    this.#o = options;
  }

  /** Before checking a password: may this attempt go ahead? If so it is counted now. */
  begin(key: string, nowMs: number, client = ""): ThrottleDecision {
    let e = this.#live(key, nowMs);
    if (e !== undefined && e.attempts >= this.#o.freeFailures) {
      const next = e.lastAttemptMs + this.#o.intervalMs;
      if (nowMs < next) return { allowed: false, retryAfterMs: next - nowMs, reason: "throttled" };
    }
    if (e === undefined) {
      const perClient = this.#o.maxEntriesPerClient ?? Number.POSITIVE_INFINITY;
      if ((this.#perClient.get(client) ?? 0) >= perClient) this.#expire(nowMs);
      if ((this.#perClient.get(client) ?? 0) >= perClient || !this.#makeRoom(nowMs))
        return { allowed: false, retryAfterMs: this.#o.intervalMs, reason: "table_full" };
      e = { attempts: 0, lastAttemptMs: nowMs, client };
      this.#perClient.set(client, (this.#perClient.get(client) ?? 0) + 1);
    }
    e.attempts++;
    e.lastAttemptMs = nowMs;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return { allowed: true };
  }

  succeeded(key: string): void {
    this.#delete(key);
  }

  /** An attempt `begin` let through that checked no password (the hash queue was full): not counted. */
  refund(key: string): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    e.attempts--;
    if (e.attempts <= 0) this.#delete(key);
  }

  #delete(key: string): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    this.#entries.delete(key);
    const n = (this.#perClient.get(e.client) ?? 1) - 1;
    if (n <= 0) this.#perClient.delete(e.client);
    else this.#perClient.set(e.client, n);
  }

  get size(): number {
    return this.#entries.size;
  }

  #live(key: string, nowMs: number): Entry | undefined {
    const e = this.#entries.get(key);
    if (e !== undefined && nowMs - e.lastAttemptMs >= this.#o.forgetAfterMs) {
      this.#delete(key);
      return undefined;
    }
    return e;
  }

  /** Drops expired entries (oldest first: they are at the front). */
  #expire(nowMs: number): void {
    for (const [k, e] of this.#entries) {
      if (nowMs - e.lastAttemptMs >= this.#o.forgetAfterMs) this.#delete(k);
      else break;
    }
  }

  /** Frees a slot for a new key without dropping a throttled one; false when impossible. */
  #makeRoom(nowMs: number): boolean {
    if (this.#entries.size < this.#o.maxEntries) return true;
    this.#expire(nowMs);
    if (this.#entries.size < this.#o.maxEntries) return true;
    for (const [k, e] of this.#entries) {
      if (e.attempts < this.#o.freeFailures) {
        this.#delete(k);
        return true;
      }
    }
    return false;
  }
}
