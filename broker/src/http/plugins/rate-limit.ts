// Per-topic and per-client produce rate limits in messages per second
// (token buckets, core/token-bucket.ts). A batch takes one token per record.
// The client is the authenticated principal when the request has one,
// otherwise the peer's IP address. Refusals are 429 with a Retry-After
// computed from the bucket, before anything is written to the WAL.

import type { FastifyRequest } from "fastify";
import { type BucketLimit, KeyedBuckets } from "../../core/token-bucket.ts";
import { NaradError } from "../../errors.ts";

export interface RateLimitOptions {
  topic?: BucketLimit;
  client?: BucketLimit;
  now?: () => number;
  onLimited?: (scope: "topic" | "client") => void;
}

/** The principal an auth plugin attached to the request, if any (a string or an object with a name). */
export function clientOf(request: FastifyRequest): string {
  const p = (request as unknown as { principal?: unknown }).principal;
  if (typeof p === "string" && p !== "") return `principal:${p}`;
  if (typeof p === "object" && p !== null) {
    const name = (p as { name?: unknown; id?: unknown }).name ?? (p as { id?: unknown }).id;
    if (typeof name === "string" && name !== "") return `principal:${name}`;
  }
  return `ip:${request.ip}`;
}

export class RateLimits {
  readonly #topics: KeyedBuckets | undefined;
  readonly #clients: KeyedBuckets | undefined;
  readonly #now: () => number;
  readonly #onLimited: ((scope: "topic" | "client") => void) | undefined;

  constructor(opts: RateLimitOptions) {
    this.#topics = opts.topic === undefined ? undefined : new KeyedBuckets(opts.topic);
    this.#clients = opts.client === undefined ? undefined : new KeyedBuckets(opts.client);
    this.#now = opts.now ?? Date.now;
    this.#onLimited = opts.onLimited;
  }

  get enabled(): boolean {
    return this.#topics !== undefined || this.#clients !== undefined;
  }

  /**
   * Takes `messages` tokens from both the client's and the topic's bucket, or
   * none: a request refused by one limit does not use up the other. Throws
   * 429 + Retry-After when either is short (the client's is checked first).
   */
  check(request: FastifyRequest, topic: string, messages: number): void {
    const now = this.#now();
    const client = this.#clients === undefined ? "" : clientOf(request);
    if (this.#clients !== undefined) {
      const r = this.#clients.check(client, messages, now);
      if (!r.ok) throw this.#limited("client", `client ${client.replace(/^\w+:/, "")}`, r.retryAfterMs);
    }
    if (this.#topics !== undefined) {
      const r = this.#topics.take(topic, messages, now);
      if (!r.ok) throw this.#limited("topic", `topic ${topic}`, r.retryAfterMs);
    }
    this.#clients?.take(client, messages, now);
  }

  #limited(scope: "topic" | "client", what: string, retryAfterMs: number): NaradError {
    this.#onLimited?.(scope);
    const limit = scope === "topic" ? this.#topics!.limit : this.#clients!.limit;
    return new NaradError(
      "TOO_MANY_REQUESTS",
      `rate limit for ${what} exceeded (${limit.rate} messages/s, burst ${limit.burst}); retry after ${retryAfterMs} ms`,
      { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) },
    );
  }
}
