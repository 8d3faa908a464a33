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
