// Token buckets for rate limits: `rate` tokens per second up to `burst`,
// with the clock passed in so tests control time. A keyed set of buckets
// (one per topic or per client) forgets idle ones so a stream of distinct
// client addresses cannot grow memory without bound.

export interface BucketLimit {
  /** Tokens added per second. */
  rate: number;
  /** Most tokens the bucket holds (the largest burst let through at once). */
  burst: number;
}

export type TakeResult = { ok: true } | { ok: false; retryAfterMs: number };

export class TokenBucket {
  readonly limit: BucketLimit;
  #tokens: number;
  #lastMs: number;

  constructor(limit: BucketLimit, nowMs: number) {
    if (!(limit.rate > 0) || !(limit.burst >= 1)) throw new RangeError("rate must be > 0 and burst >= 1");
    this.limit = limit;
    this.#tokens = limit.burst;
    this.#lastMs = nowMs;
  }

  tokens(nowMs: number): number {
    this.#refill(nowMs);
    return this.#tokens;
  }

  /**
   * Takes n tokens. A take larger than the burst passes once the bucket is
   * full and leaves it in debt (so a big batch is slowed, never refused
   * forever); otherwise it needs n tokens. When refused, retryAfterMs says
   * when the tokens it needs will be there.
   */
  take(n: number, nowMs: number): TakeResult {
    const r = this.check(n, nowMs);
    if (r.ok) this.#tokens -= n;
    return r;
  }

  /** What take(n) would answer, without taking anything. */
  check(n: number, nowMs: number): TakeResult {
    this.#refill(nowMs);
    const need = Math.min(n, this.limit.burst);
    if (this.#tokens >= need) return { ok: true };
    return { ok: false, retryAfterMs: Math.ceil(((need - this.#tokens) / this.limit.rate) * 1000) };
  }

  /** True when the bucket is full again, so forgetting it changes nothing. */
  idle(nowMs: number): boolean {
    return this.tokens(nowMs) >= this.limit.burst;
  }

  #refill(nowMs: number): void {
    const elapsed = nowMs - this.#lastMs;
    if (elapsed <= 0) return;
    this.#lastMs = nowMs;
    this.#tokens = Math.min(this.limit.burst, this.#tokens + (elapsed / 1000) * this.limit.rate);
  }
}

export class KeyedBuckets {
  readonly limit: BucketLimit;
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #maxKeys: number;

  constructor(limit: BucketLimit, maxKeys = 100_000) {
    this.limit = limit;
    this.#maxKeys = maxKeys;
  }

  get size(): number {
    return this.#buckets.size;
  }

  take(key: string, n: number, nowMs: number): TakeResult {
    return this.#bucket(key, nowMs).take(n, nowMs);
  }

  /** What take would answer, without taking (an unknown key has a full bucket). */
  check(key: string, n: number, nowMs: number): TakeResult {
    const b = this.#buckets.get(key);
    return b === undefined ? new TokenBucket(this.limit, nowMs).check(n, nowMs) : b.check(n, nowMs);
  }

  #bucket(key: string, nowMs: number): TokenBucket {
    let b = this.#buckets.get(key);
    if (b === undefined) {
      if (this.#buckets.size >= this.#maxKeys) this.sweep(nowMs);
      b = new TokenBucket(this.limit, nowMs);
      this.#buckets.set(key, b);
    }
    return b;
  }

  /** Forgets buckets that refilled completely: a fresh bucket would behave the same. */
  sweep(nowMs: number): number {
    let removed = 0;
    for (const [key, b] of this.#buckets) {
      if (b.idle(nowMs)) {
        this.#buckets.delete(key);
        removed++;
      }
    }
    return removed;
  }
}
