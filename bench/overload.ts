// `npm run bench:overload` (part of `npm run bench`): the broker offered
// twice what it sustains. First the sustainable rate is measured closed-loop
// (as fast as the connections go); then the same requests are offered open-
// loop at 2× that rate from many more connections. Goodput (accepted per
// second) is reported against the sustainable rate, with the p99 of the
// accepted requests and the broker's RSS growth. Two workloads:
//   - 1 MiB batches (64 × 16 KiB records): disk-bound; the produce memory
//     budget is what keeps memory bounded here;
//   - single 1 KiB messages: CPU-bound.
// BENCH_SECONDS (default 10) sets each phase's measured window; every phase
// first runs a warm-up (BENCH_WARMUP_SECONDS, default 10) that is not
// measured, so the queue and the group commit reach their steady state
// before the window opens (with 120 MiB in flight a request waits seconds,
// and a window that opens with the flood counts the ramp, not the rate).

import { cpus } from "node:os";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { startNarad, startNoop } from "../broker/test/harness/process.ts";
import { flood, percentile, rssBytes } from "./lib/flood.ts";
import { load } from "./lib/load.ts";
import { delta, scrape } from "./lib/metrics.ts";
import { createTopic, Report, rssSampler } from "./lib/report.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 10);
const MiB = 1 << 20;
const report = new Report();
const batchType = { "content-type": "application/vnd.narad.batch" };

/** Runs `run` for a warm-up and then a measured window; `counting` is true inside the window. */
async function measured<T>(
  run: (window: { stop: () => boolean; counting: () => boolean }) => Promise<T>,
): Promise<T> {
  let counting = false;
  let stopped = false;
  const open = setTimeout(() => {
    counting = true;
  }, warmupSeconds * 1000);
  const close = setTimeout(
    () => {
      stopped = true;
    },
    (warmupSeconds + seconds) * 1000,
  );
  try {
    return await run({ stop: () => stopped, counting: () => counting });
  } finally {
    clearTimeout(open);
    clearTimeout(close);
  }
}

async function main(): Promise<void> {
  process.stderr.write(
    `narad overload bench: ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${seconds}s phases\n`,
  );
  const body1k = Buffer.alloc(1024, "x");
  process.stderr.write("baseline: no-op fastify POST route, 64 connections, 1 KiB bodies\n");
  const noop = await startNoop();
  const base = await load({ url: `${noop.url}/noop`, connections: 64, seconds, body: body1k });
  await noop.stop();
  report.record("noop_route_req_per_sec", base.requestsPerSec, "req/s");

  const narad = await startNarad();
  const pid = narad.child.pid as number;
  try {
    await createTopic(narad.url, "batch", 8);
    await createTopic(narad.url, "single", 8);
    const url = `${narad.url}/v1/topics/batch/produce-batch`;
    const payload = Buffer.alloc(16 * 1024, "b");
    const batch = encodeBinaryBatch(
      Array.from({ length: 64 }, () => ({ partition: -1, key: Buffer.alloc(0), payload })),
    );
    const batchMiB = batch.length / MiB;

    // 120 connections: as many 1 MiB requests in flight as the default budget
    // holds, so the closed loop finds the maximum (8 and 32 did not on a busy
    // machine: 2x of their rate was still absorbed) without waiting for admission.
    process.stderr.write("batch: sustainable rate, closed loop, 120 connections, 1 MiB bodies\n");
    const rss0 = rssBytes(pid); // idle: growth is measured from here to the peak under 2×
    const sus = await measured((w) =>
      flood({ url, body: batch, connections: 120, headers: batchType, ...w }),
    );
    if (sus.rejected429 > 0 || sus.errors > 0 || sus.other.size > 0) {
      throw new Error(`sustainable phase: ${sus.rejected429} × 429, ${sus.errors} errors`);
    }
    const susRate = sus.accepted / seconds;
    sus.acceptedMs.sort((a, b) => a - b);
    report.record("batch_sustainable_mib_per_sec", susRate * batchMiB, "MiB/s");
    report.record("batch_sustainable_p99_ms", percentile(sus.acceptedMs, 0.99), "ms");

    process.stderr.write(
      `batch: offered at 2× (${(2 * susRate).toFixed(1)} req/s) from 512 connections, honouring Retry-After\n`,
    );
    const before = await scrape(narad.url);
    const sampler = rssSampler(() => rssBytes(pid));
    const over = await measured((w) =>
      flood({ url, body: batch, connections: 512, headers: batchType, rate: 2 * susRate, ...w }),
    );
    const peak = sampler.stop();
    const after = await scrape(narad.url);
    over.acceptedMs.sort((a, b) => a - b);
    const goodput = over.accepted / seconds;
    report.record("batch_overload_goodput_mib_per_sec", goodput * batchMiB, "MiB/s", susRate * batchMiB);
    report.record("batch_overload_accepted_p99_ms", percentile(over.acceptedMs, 0.99), "ms");
    report.record("batch_overload_429_per_sec", over.rejected429 / seconds, "req/s");
    report.record(
      "batch_overload_errors",
      over.errors + [...over.other.values()].reduce((a, b) => a + b, 0),
      "req",
    );
    report.record(
      "batch_overload_admission_wait_mean_s",
      delta(before, after, "narad_admission_wait_seconds_sum") /
        Math.max(1, delta(before, after, "narad_admission_wait_seconds_count")),
      "s (mean)",
    );
    report.record("batch_overload_rss_growth_mib", (peak - rss0) / MiB, "MiB");

    // Let the dispatcher catch up so the next phase starts from an empty backlog.
    await waitBacklog(narad.url, 300_000);

    process.stderr.write("single 1 KiB: sustainable rate, closed loop, 64 connections\n");
    const surl = `${narad.url}/v1/topics/single/produce`;
    const s1 = await load({ url: surl, connections: 64, seconds, body: body1k, warmupSeconds });
    if (s1.non2xx > 0 || s1.errors > 0) throw new Error(`single sustainable: ${s1.non2xx} non-2xx`);
    report.record("single_sustainable_req_per_sec", s1.requestsPerSec, "req/s", base.requestsPerSec);
    report.record("single_sustainable_p99_ms", s1.p99Ms, "ms");
    process.stderr.write(
      `single 1 KiB: offered at 2× (${(2 * s1.requestsPerSec).toFixed(0)} req/s) from 512 connections\n`,
    );
    const rss1 = rssBytes(pid);
    const sampler1 = rssSampler(() => rssBytes(pid));
    const s2 = await load({
      url: surl,
      connections: 512,
      seconds,
      body: body1k,
      overallRate: Math.round(2 * s1.requestsPerSec),
      warmupSeconds,
    });
    const peak1 = sampler1.stop();
    report.record(
      "single_overload_goodput_req_per_sec",
      s2.requestsPerSec * (1 - s2.non2xx / Math.max(1, s2.total)),
      "req/s",
      s1.requestsPerSec,
    );
    report.record("single_overload_p99_ms", s2.p99Ms, "ms");
    report.record("single_overload_non2xx", s2.non2xx + s2.errors, "req");
    report.record("single_overload_rss_growth_mib", (peak1 - rss1) / MiB, "MiB");
  } finally {
    await narad.stop();
  }
  report.write(
    "overload-results.json",
    "bench-overload",
    `${seconds} s phases; ratios: goodput / sustainable rate measured in the same run`,
  );
}

async function waitBacklog(url: string, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const m = await scrape(url);
    if ((m.get("narad_wal_pending_records") ?? 0) === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("WAL backlog did not drain");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
