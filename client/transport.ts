// HTTP transport of the client: Node's built-in fetch (undici, keep-alive by
// default), a per-attempt timeout, retries with exponential backoff on
// 503/429/network errors honouring Retry-After, and failover across urls.
//
// Each url remembers until when it should be avoided (now + max(Retry-After,
// backoff) after a failure). An attempt goes to the first url, from the
// current one on, that is available now, else to the one available soonest,
// after sleeping until then. One url: plain backoff. Several: a draining or
// dead broker is skipped at once and retried later.
//
// Credentials (auth) go in an Authorization header on every request. With a
// custom CA (tls.ca) requests go through node:https with a keep-alive agent
// that trusts it, since fetch takes no TLS options.

import { Agent, request as httpsRequest } from "node:https";
import {
  type ErrorContext,
  errorFromResponse,
  type NaradError,
  parseRetryAfter,
  UnavailableError,
} from "./errors.ts";

/** Basic credentials, or a bearer token. */
export type ClientAuth = { username: string; password: string } | { token: string };

export interface ClientTls {
  /** PEM CA certificate(s) to trust for https:// urls. */
  ca: string | Buffer | ReadonlyArray<string | Buffer>;
}

export interface TransportOptions {
  urls: readonly string[];
  timeoutMs: number;
  retries: number;
  backoffMs: number;
  maxBackoffMs: number;
  auth?: ClientAuth;
  tls?: ClientTls;
}

export function authorizationHeader(auth: ClientAuth): string {
  if ("token" in auth) return `Bearer ${auth.token}`;
  if (auth.username.includes(":")) throw new TypeError("username must not contain ':'");
  return `Basic ${Buffer.from(`${auth.username}:${auth.password}`, "utf8").toString("base64")}`;
}

interface RawReply {
  status: number;
  body: Buffer;
  retryAfter: string | null;
}

/** One request over node:https (custom CA). */
function httpsOnce(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: Uint8Array | string; signal: AbortSignal },
  agent: Agent,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: init.method, headers: init.headers, agent, signal: init.signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const ra = res.headers["retry-after"];
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks),
            retryAfter: ra === undefined ? null : String(ra),
          });
        });
      },
    );
    req.on("error", (err) => reject(init.signal.aborted ? init.signal.reason : err));
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
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

/** The `code` field of a JSON error body, if any. */
function errorCode(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { code?: unknown };
    return typeof parsed.code === "string" ? parsed.code : undefined;
  } catch {
    return undefined;
  }
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
  readonly #authorization: string | undefined;
  readonly #agent: Agent | undefined;
  #current = 0;

  constructor(opts: TransportOptions) {
    if (opts.urls.length === 0) throw new TypeError("NaradClient needs at least one url");
    this.urls = opts.urls.map(normalizeUrl);
    this.#opts = opts;
    this.#availableAt = this.urls.map(() => 0);
    this.#authorization = opts.auth === undefined ? undefined : authorizationHeader(opts.auth);
    const ca = opts.tls?.ca;
    this.#agent =
      ca === undefined
        ? undefined
        : new Agent({ keepAlive: true, ca: Array.isArray(ca) ? [...ca] : (ca as string | Buffer) });
  }

  /** Each attempt's timeout unless a call sets its own. */
  get timeoutMs(): number {
    return this.#opts.timeoutMs;
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
          errorCode(reply.body),
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
    if (this.#authorization !== undefined) headers.authorization = this.#authorization;
    const url = this.#buildUrl(base, call);
    const init = {
      method: call.method,
      headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      signal,
    };
    let raw: RawReply;
    if (this.#agent !== undefined && url.startsWith("https://")) {
      raw = await httpsOnce(url, init, this.#agent);
    } else {
      const res = await fetch(url, init);
      // Always read the body so the keep-alive connection goes back to the pool.
      raw = {
        status: res.status,
        body: Buffer.from(await res.arrayBuffer()),
        retryAfter: res.headers.get("retry-after"),
      };
    }
    return {
      status: raw.status,
      body: raw.body,
      url: base,
      retryAfterMs: parseRetryAfter(raw.retryAfter),
    };
  }
}
