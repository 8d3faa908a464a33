// acks=wal vs acks=all on one node, in the same run: single 1 KiB produce
// from 64 connections and 100 x 1 KiB batches from 8 connections, each mode
// after an unmeasured warm-up. acks=all waits for the partition commit
// (the dispatcher's fsync + read-back) on top of the WAL fsync; the ratio is
// all / wal. Then the TypeScript client's idempotent producer (acks=all,
// 1 KiB records, 100-record batches; keyed over the 8 partitions, then all on
// one partition) with 1 and with 5 batches in flight per partition; the
// ratio is 5 / 1. Writes
// bench/acks-results.json and the bench-acks table of docs/benchmarks.md.
// BENCH_SECONDS (default 8), BENCH_WARMUP_SECONDS (default 3).

import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { startNarad } from "../broker/test/harness/process.ts";
import { NaradClient } from "../client/index.ts";
import { load } from "./lib/load.ts";
import { createTopic, Report } from "./lib/report.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const body1k = Buffer.alloc(1024, 0x61);
const batch100 = encodeBinaryBatch(
  Array.from({ length: 100 }, (_, i) => ({ partition: i % 8, key: Buffer.alloc(0), payload: body1k })),
);

const report = new Report();
const narad = await startNarad();
try {
  await createTopic(narad.url, "acks", 8);
  const single: Record<string, Awaited<ReturnType<typeof load>>> = {};
  const batch: Record<string, Awaited<ReturnType<typeof load>>> = {};
  for (const acks of ["wal", "all"]) {
    process.stderr.write(`single 1 KiB produce, acks=${acks}, 64 connections\n`);
    single[acks] = await load({
      url: `${narad.url}/v1/topics/acks/produce?acks=${acks}`,
      connections: 64,
      seconds,
      warmupSeconds,
      body: body1k,
    });
    process.stderr.write(`batch 100 x 1 KiB, acks=${acks}, 8 connections\n`);
    batch[acks] = await load({
      url: `${narad.url}/v1/topics/acks/produce-batch?acks=${acks}`,
      connections: 8,
      seconds,
      warmupSeconds,
      body: batch100,
      headers: { "content-type": "application/vnd.narad.batch" },
    });
  }
  for (const r of [...Object.values(single), ...Object.values(batch)]) {
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx and ${r.errors} errors`);
  }
  const w = single.wal!;
  const a = single.all!;
  report.record("single_acks_wal_req_per_sec", w.requestsPerSec, "req/s");
  report.record("single_acks_all_req_per_sec", a.requestsPerSec, "req/s", w.requestsPerSec);
  report.record("single_acks_wal_p99_ms", w.p99Ms, "ms");
  report.record("single_acks_all_p99_ms", a.p99Ms, "ms", w.p99Ms);
  const bw = batch.wal!;
  const ba = batch.all!;
  report.record("batch_acks_wal_msg_per_sec", bw.requestsPerSec * 100, "msg/s");
  report.record("batch_acks_all_msg_per_sec", ba.requestsPerSec * 100, "msg/s", bw.requestsPerSec * 100);
  report.record("batch_acks_wal_p99_ms", bw.p99Ms, "ms");
  report.record("batch_acks_all_p99_ms", ba.p99Ms, "ms", bw.p99Ms);
  // The client: 1 vs 5 idempotent batches in flight per partition, with
  // keyed records over the 8 partitions and with every record on partition 0
  // (where one partition's pipeline is all there is).
  const rate: Record<string, number> = {};
  for (const spread of ["keyed", "one"] as const) {
    for (const maxInFlight of [1, 5]) {
      process.stderr.write(
        `idempotent client producer, ${spread} partition(s), maxInFlight=${maxInFlight}\n`,
      );
      const client = new NaradClient({ urls: [narad.url] });
      const p = client.producer("acks", { idempotent: true, maxInFlight, batchSize: 100, lingerMs: 2 });
      const payload = "a".repeat(1024);
      const run = async (ms: number): Promise<number> => {
        const until = Date.now() + ms;
        let n = 0;
        while (Date.now() < until) {
          await p.send(payload, spread === "keyed" ? { key: `k${n % 1000}` } : { partition: 0 });
          n++;
        }
        await p.flush();
        return n;
      };
      await run(warmupSeconds * 1000);
      const started = Date.now();
      const n = await run(seconds * 1000);
      rate[`${spread}${maxInFlight}`] = n / ((Date.now() - started) / 1000);
      const m = p.metrics;
      process.stderr.write(
        `  ${n} records; most batches of one partition in flight: ${m.maxInFlightSeen}; records re-sent: ${m.recordsRetried}; re-inits: ${m.reinits}; mean request ${m.requestLatencyAvgMs.toFixed(1)} ms\n`,
      );
      await p.close();
      await client.close();
    }
  }
  report.record("client_idempotent_8p_inflight1_msg_per_sec", rate.keyed1!, "msg/s");
  report.record("client_idempotent_8p_inflight5_msg_per_sec", rate.keyed5!, "msg/s", rate.keyed1!);
  report.record("client_idempotent_1p_inflight1_msg_per_sec", rate.one1!, "msg/s");
  report.record("client_idempotent_1p_inflight5_msg_per_sec", rate.one5!, "msg/s", rate.one1!);
  report.write(
    "acks-results.json",
    "bench-acks",
    `${seconds} s phases; ratios acks=all / acks=wal, and 5 / 1 batches in flight, in the same run`,
  );
} finally {
  await narad.stop();
}
