// A thin wrapper over autocannon (the load generator) returning the numbers
// the report needs.

import autocannon from "autocannon";

export interface LoadResult {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  total: number;
}

export async function load(opts: {
  url: string;
  connections: number;
  seconds: number;
  body: Buffer;
  headers?: Record<string, string>;
  pipelining?: number;
  /** Requests per second across all connections (a fixed offered load); unset = as fast as possible. */
  overallRate?: number;
  /** An unmeasured run of this length (same load) first, so JIT and group commit settle. */
  warmupSeconds?: number;
}): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    method: "POST",
    connections: opts.connections,
    duration: opts.seconds,
    pipelining: opts.pipelining ?? 1,
    ...(opts.overallRate === undefined ? {} : { overallRate: opts.overallRate }),
    ...(opts.warmupSeconds === undefined
      ? {}
      : { warmup: { connections: opts.connections, duration: opts.warmupSeconds } }),
    body: opts.body,
    headers: { "content-type": "application/octet-stream", ...opts.headers },
  });
  return {
    requestsPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    total: result.requests.total,
  };
}

export interface SpreadLoadResult extends LoadResult {
  /** 2xx answers over every target. */
  ok: number;
  /** Answers per status code (non-2xx ones name what went wrong). */
  statusCodes: Record<string, number>;
  /** Completed requests over every target. */
  completed: number;
  seconds: number;
}

/** autocannon's merge of per-run latency histograms (not in its type declarations). */
const aggregate = (
  autocannon as unknown as {
    aggregateResult(results: unknown[], opts: { url: string; connections: number }): autocannon.Result;
  }
).aggregateResult;

/**
 * The same request against several URLs at once (one autocannon run each,
 * all started together), merged: the rate is all completed requests over the
 * phase, the percentiles come from the merged latency histograms.
 */
export async function loadSpread(opts: {
  targets: Array<{ url: string; connections: number }>;
  seconds: number;
  body: Buffer;
  headers?: Record<string, string>;
}): Promise<SpreadLoadResult> {
  const raw = await Promise.all(
    opts.targets.map(
      (t) =>
        autocannon({
          url: t.url,
          method: "POST",
          connections: t.connections,
          duration: opts.seconds,
          body: opts.body,
          headers: { "content-type": "application/octet-stream", ...opts.headers },
          skipAggregateResult: true,
        }) as unknown as Promise<{
          totalCompletedRequests: number;
          /** Seconds this run took. */
          duration: number;
          "2xx": number;
          non2xx: number;
          errors: number;
          statusCodeStats: Record<string, { count?: number }>;
        }>,
    ),
  );
  const seconds = Math.max(...raw.map((r) => r.duration));
  const merged = aggregate(raw, {
    url: opts.targets[0]?.url ?? "",
    connections: opts.targets.reduce((a, t) => a + t.connections, 0),
  });
  const completed = raw.reduce((a, r) => a + r.totalCompletedRequests, 0);
  const statusCodes: Record<string, number> = {};
  for (const r of raw)
    for (const [code, s] of Object.entries(r.statusCodeStats ?? {}))
      statusCodes[code] = (statusCodes[code] ?? 0) + (s.count ?? 0);
  return {
    requestsPerSec: completed / seconds,
    p50Ms: merged.latency.p50,
    p99Ms: merged.latency.p99,
    non2xx: raw.reduce((a, r) => a + r.non2xx, 0),
    errors: raw.reduce((a, r) => a + r.errors, 0),
    total: completed,
    ok: raw.reduce((a, r) => a + r["2xx"], 0),
    statusCodes,
    completed,
    seconds,
  };
}
