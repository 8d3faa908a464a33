// Raw-socket load helpers shared by the overload test and benchmarks: many
// concurrent large POSTs on their own keep-alive connections (so megabytes
// are in flight at once), a broker's RSS from /proc, and a latency probe.

import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";

export interface PostResult {
  status: number;
  body: string;
  retryAfter: string | undefined;
  ms: number;
}

/** One POST on the given agent; resolves with the status and body (never throws on HTTP status). */
export function post(
  url: string,
  body: Buffer,
  opts: { agent?: Agent; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<PostResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent: opts.agent,
        headers: {
          "content-type": "application/octet-stream",
          "content-length": body.length,
          ...opts.headers,
        },
        timeout: opts.timeoutMs ?? 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            retryAfter: res.headers["retry-after"] as string | undefined,
            ms: performance.now() - t0,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(body);
  });
}

export interface FloodStats {
  /** 2xx answers that arrived inside the measured window (rates divide these by the window). */
  accepted: number;
  /** 2xx answers that arrived during the warm-up, before counting() turned true. */
  acceptedWarmup: number;
  /** 2xx answers to requests still in flight at the stop, which arrived after it. */
  acceptedLate: number;
  rejected429: number;
  other: Map<number, number>;
  errors: number;
  /** Latencies (ms) of the accepted requests. */
  acceptedMs: number[];
}

/**
 * `connections` loops each POSTing `body` back to back until `stop()` is true.
 * A 429 is honoured like a client would: the loop waits Retry-After (capped
 * by `maxBackoffMs`) before its next request.
 */
export async function flood(opts: {
  url: string;
  body: Buffer;
  connections: number;
  headers?: Record<string, string>;
  stop: () => boolean;
  /** False during a warm-up whose answers are not measured; unset = always measured. */
  counting?: () => boolean;
  maxBackoffMs?: number;
  /** Requests per second for the whole flood (each loop paces itself); unset = back to back. */
  rate?: number;
}): Promise<FloodStats> {
  const stats: FloodStats = {
    accepted: 0,
    acceptedWarmup: 0,
    acceptedLate: 0,
    rejected429: 0,
    other: new Map(),
    errors: 0,
    acceptedMs: [],
  };
  const perLoopGapMs = opts.rate === undefined ? 0 : (opts.connections * 1000) / opts.rate;
  const loop = async (i: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    // Loops start spread over one gap so a paced flood is smooth.
    let next = performance.now() + (perLoopGapMs * i) / opts.connections;
    try {
      while (!opts.stop()) {
        if (perLoopGapMs > 0) {
          const wait = next - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          next += perLoopGapMs;
          // Behind schedule (the server was slow): do not burst to catch up.
          if (next < performance.now()) next = performance.now();
          if (opts.stop()) break;
        }
        try {
          const r = await post(opts.url, opts.body, {
            agent,
            ...(opts.headers === undefined ? {} : { headers: opts.headers }),
          });
          if (r.status >= 200 && r.status < 300) {
            if (opts.stop()) stats.acceptedLate++;
            else if (opts.counting !== undefined && !opts.counting()) stats.acceptedWarmup++;
            else {
              stats.accepted++;
              stats.acceptedMs.push(r.ms);
            }
          } else if (r.status === 429) {
            if (opts.counting === undefined || opts.counting()) stats.rejected429++;
            const backoff = Math.min(Number(r.retryAfter ?? 1) * 1000, opts.maxBackoffMs ?? 1000);
            await new Promise((res) => setTimeout(res, backoff));
          } else stats.other.set(r.status, (stats.other.get(r.status) ?? 0) + 1);
        } catch {
          stats.errors++;
          await new Promise((res) => setTimeout(res, 50));
        }
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, (_, i) => loop(i)));
  return stats;
}

/** Resident set size of a process in bytes (VmRSS from /proc). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (m === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number;
}
