// HTTP transport of the client: Node's built-in fetch (undici, keep-alive by
// default), a per-attempt timeout, retries with exponential backoff on
// 503/429/network errors honouring Retry-After, and failover across urls.
//
// Each url remembers until when it should be avoided (now + max(Retry-After,
// backoff) after a failure). An attempt goes to the first url, from the
// current one on, that is available now, else to the one available soonest,
// after sleeping until then. One url: plain backoff. Several: a draining or
// dead broker is skipped at once and retried later.

import {
  type ErrorContext,
  errorFromResponse,
  type NaradError,
  parseRetryAfter,
  UnavailableError,
} from "./errors.ts";

export interface TransportOptions {
  urls: readonly string[];
  timeoutMs: number;
  retries: number;
  backoffMs: number;
  maxBackoffMs: number;
}

export type QueryValue = string | number | boolean | undefined;

export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, QueryValue>;
  body?: Uint8Array | string;
  contentType?: string;
  /** Extra request headers (the same on every retry). */
  headers?: Record<string, string>;
  ctx?: ErrorContext;
  /** Overrides the transport's; Infinity retries until the signal aborts. */
  retries?: number;
  backoffMs?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Only this base url (admin calls to one broker): no failover. */
  url?: string;
  /** Called before each retry. */
  onRetry?: (err: NaradError, attempt: number, delayMs: number) => void;
}

export interface Reply {
  status: number;
  body: Buffer;
  url: string;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function errorMessage(body: Buffer, status: number): string {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
  } catch {
    // not JSON
  }
  const text = body.toString("utf8").trim();
  return text === "" ? `HTTP ${status}` : text.slice(0, 500);
}

export function normalizeUrl(url: string): string {
  const u = url.trim().replace(/\/+$/, "");
  if (!/^https?:\/\//.test(u))
    throw new TypeError(`broker url must start with http:// or https://, got "${url}"`);
  return u;
}

export class Transport {
  readonly urls: readonly string[];
  readonly #opts: TransportOptions;
  readonly #availableAt: number[];
  #current = 0;

  constructor(opts: TransportOptions) {
    if (opts.urls.length === 0) throw new TypeError("NaradClient needs at least one url");
    this.urls = opts.urls.map(normalizeUrl);
    this.#opts = opts;
    this.#availableAt = this.urls.map(() => 0);
  }

  backoff(attempt: number, baseMs = this.#opts.backoffMs): number {
    const ceiling = Math.min(this.#opts.maxBackoffMs, baseMs * 2 ** Math.min(attempt, 30));
    // "Equal jitter": between half and all of the exponential step.
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  #pick(now: number): { index: number; delayMs: number } {
    let best = this.#current;
    for (let i = 0; i < this.urls.length; i++) {
      const idx = (this.#current + i) % this.urls.length;
      if ((this.#availableAt[idx] ?? 0) <= now) return { index: idx, delayMs: 0 };
      if ((this.#availableAt[idx] ?? 0) < (this.#availableAt[best] ?? 0)) best = idx;
    }
    return { index: best, delayMs: (this.#availableAt[best] ?? 0) - now };
  }

  #buildUrl(base: string, call: Call): string {
    let url = base + call.path;
    if (call.query !== undefined) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(call.query)) if (v !== undefined) params.set(k, String(v));
      const qs = params.toString();
      if (qs !== "") url += `?${qs}`;
    }
    return url;
  }

  async request(call: Call): Promise<Reply> {
    const retries = call.retries ?? this.#opts.retries;
    const ctx = call.ctx ?? {};
    for (let attempt = 0; ; attempt++) {
      let index = -1;
      let base: string;
      if (call.url !== undefined) {
        base = normalizeUrl(call.url);
      } else {
        const pick = this.#pick(Date.now());
        if (pick.delayMs > 0) await sleep(pick.delayMs, call.signal);
        index = pick.index;
        base = this.urls[index] as string;
      }
      let err: NaradError;
      try {
        const reply = await this.#once(base, call);
        if (reply.status < 400) {
          if (index >= 0) this.#current = index;
          return reply;
        }
        err = errorFromResponse(
          reply.status,
          errorMessage(reply.body, reply.status),
          reply.retryAfterMs,
          ctx,
        );
      } catch (cause) {
        if (call.signal?.aborted) throw call.signal.reason;
        const timedOut = (cause as Error).name === "TimeoutError";
        err = new UnavailableError(
          timedOut
            ? `${call.method} ${base}${call.path}: no answer within ${call.timeoutMs ?? this.#opts.timeoutMs} ms`
            : `${call.method} ${base}${call.path}: ${(cause as Error).message}${
                (cause as { cause?: Error }).cause?.message
                  ? ` (${(cause as { cause?: Error }).cause?.message})`
                  : ""
              }`,
          { status: 0, cause },
        );
      }
      if (!(err instanceof UnavailableError) || attempt >= retries) throw err;
      const delayMs = Math.max(err.retryAfterMs ?? 0, this.backoff(attempt, call.backoffMs));
      call.onRetry?.(err, attempt + 1, delayMs);
      if (index >= 0) {
        this.#availableAt[index] = Date.now() + delayMs;
        this.#current = (index + 1) % this.urls.length;
      } else {
        await sleep(delayMs, call.signal);
      }
    }
  }

  async #once(base: string, call: Call): Promise<Reply & { retryAfterMs: number | undefined }> {
    const timeout = AbortSignal.timeout(call.timeoutMs ?? this.#opts.timeoutMs);
    const signal = call.signal === undefined ? timeout : AbortSignal.any([timeout, call.signal]);
    const headers: Record<string, string> = { ...call.headers };
    if (call.contentType !== undefined) headers["content-type"] = call.contentType;
    const res = await fetch(this.#buildUrl(base, call), {
      method: call.method,
      headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      signal,
    });
    // Always read the body so the keep-alive connection goes back to the pool.
    const body = Buffer.from(await res.arrayBuffer());
    return {
      status: res.status,
      body,
      url: base,
      retryAfterMs: parseRetryAfter(res.headers.get("retry-after")),
    };
  }
}
