// `npm run bench`: measures the real broker process against a baseline taken
// in the same run (a no-op fastify POST route), prints a table and writes
// bench/results.json as [{name, value, unit, baseline, ratio}].
//
// BENCH_SECONDS (default 10) sets the length of each load phase, after an
// unmeasured warm-up of BENCH_WARMUP_SECONDS (default 5) on the same route.

import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { repoRoot, startNarad, startNoop } from "../broker/test/harness/process.ts";
import { diskSyncMiBPerSec } from "./lib/disk.ts";
import { load } from "./lib/load.ts";
import { delta, scrape } from "./lib/metrics.ts";
import { writeDocsTable } from "./lib/report.ts";

interface Result {
  name: string;
  value: number;
  unit: string;
  baseline: number | null;
  ratio: number | null;
}

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const results: Result[] = [];
const record = (name: string, value: number, unit: string, baseline: number | null = null) => {
  results.push({ name, value, unit, baseline, ratio: baseline ? value / baseline : null });
  process.stderr.write(
    `  ${name}: ${value.toFixed(2)} ${unit}${baseline ? ` (ratio ${(value / baseline).toFixed(2)})` : ""}\n`,
  );
};

async function createTopic(url: string, name: string, partitions: number): Promise<void> {
  const res = await fetch(`${url}/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, partitions }),
  });
  if (res.status !== 201) throw new Error(`create topic: ${res.status} ${await res.text()}`);
}

async function hwmSum(url: string, topic: string): Promise<number> {
  const info = (await (await fetch(`${url}/v1/topics/${topic}`)).json()) as {
    partition_stats: Array<{ high_watermark: number }>;
  };
  return info.partition_stats.reduce((a, p) => a + p.high_watermark, 0);
}

async function waitVisible(url: string, topic: string, count: number, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if ((await hwmSum(url, topic)) >= count) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`only ${await hwmSum(url, topic)} of ${count} messages visible after ${timeoutMs} ms`);
}

async function main(): Promise<void> {
  process.stderr.write(
    `narad bench: ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${seconds}s phases\n`,
  );
  const body1k = Buffer.alloc(1024, "x");

  process.stderr.write("baseline: no-op fastify POST route, 64 connections, 1 KiB bodies\n");
  const noop = await startNoop();
  // Both sides get the same unmeasured warm-up (JIT, connection setup; for the
  // broker also WAL segment preallocation), so the ratio compares steady states.
  await load({ url: `${noop.url}/noop`, connections: 64, seconds: warmupSeconds, body: body1k });
  const base = await load({ url: `${noop.url}/noop`, connections: 64, seconds, body: body1k });
  await noop.stop();
  record("noop_route_req_per_sec", base.requestsPerSec, "req/s");
  record("noop_route_p99_ms", base.p99Ms, "ms");

  const narad = await startNarad();
  try {
    await createTopic(narad.url, "bench", 8);
    process.stderr.write("single-message produce: 64 connections, 1 KiB\n");
    await load({
      url: `${narad.url}/v1/topics/bench/produce`,
      connections: 64,
      seconds: warmupSeconds,
      body: body1k,
    });
    const before = await scrape(narad.url);
    const single = await load({
      url: `${narad.url}/v1/topics/bench/produce`,
      connections: 64,
      seconds,
      body: body1k,
    });
    const after = await scrape(narad.url);
    if (single.non2xx > 0 || single.errors > 0) {
      throw new Error(`single produce: ${single.non2xx} non-2xx and ${single.errors} errors`);
    }
    record("produce_1k_req_per_sec", single.requestsPerSec, "req/s", base.requestsPerSec);
    record("produce_1k_p50_ms", single.p50Ms, "ms");
    record("produce_1k_p99_ms", single.p99Ms, "ms");
    const acked = delta(before, after, "narad_messages_produced_total");
    const fsyncs = delta(before, after, "narad_wal_fsync_seconds_count");
    record("wal_fsyncs_per_acked_message", acked > 0 ? fsyncs / acked : Number.NaN, "fsync/msg");
    record("wal_records_per_group_commit", fsyncs > 0 ? acked / fsyncs : Number.NaN, "records");

    process.stderr.write("batch produce: 1,000 x 1 KiB per request, 4 connections\n");
    const batch = encodeBinaryBatch(
      Array.from({ length: 1000 }, () => ({ partition: -1, key: Buffer.alloc(0), payload: body1k })),
    );
    const b = await load({
      url: `${narad.url}/v1/topics/bench/produce-batch`,
      connections: 4,
      seconds,
      body: batch,
      headers: { "content-type": "application/vnd.narad.batch" },
    });
    if (b.non2xx > 0 || b.errors > 0)
      throw new Error(`batch produce: ${b.non2xx} non-2xx and ${b.errors} errors`);
    record("batch_produce_msg_per_sec", b.requestsPerSec * 1000, "msg/s");
    process.stderr.write("baseline: the disk's write + fdatasync bandwidth (1 MiB blocks)\n");
    const disk = await diskSyncMiBPerSec(Math.min(5, seconds));
    record("disk_fdatasync_mib_per_sec", disk, "MiB/s");
    record("batch_produce_mib_per_sec", (b.requestsPerSec * 1000 * 1024) / (1 << 20), "MiB/s", disk);

    const total = single.total + b.total * 1000;
    const drainMs = await waitVisible(narad.url, "bench", total, 300_000);
    record("backlog_visible_after_load_ms", drainMs, "ms");

    process.stderr.write("produce→visible latency: 300 sequential messages\n");
    await createTopic(narad.url, "latency", 1);
    const lat: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t0 = performance.now();
      const res = await fetch(`${narad.url}/v1/topics/latency/produce?partition=0`, {
        method: "POST",
        body: `m${i}`,
      });
      if (res.status !== 202) throw new Error(`latency produce: ${res.status}`);
      for (;;) {
        const r = await fetch(`${narad.url}/v1/topics/latency/consume?partition=0&offset=${i}`);
        if (r.status === 200) {
          await r.arrayBuffer();
          break;
        }
        await r.arrayBuffer();
      }
      lat.push(performance.now() - t0);
    }
    lat.sort((x, y) => x - y);
    record("produce_to_visible_p50_ms", lat[Math.floor(lat.length * 0.5)] as number, "ms");
    record("produce_to_visible_p99_ms", lat[Math.floor(lat.length * 0.99)] as number, "ms");
  } finally {
    await narad.stop();
  }

  const out = join(repoRoot, "bench/results.json");
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  const table = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${seconds} s phases.`,
    "",
    "| benchmark | value | unit | baseline | ratio |",
    "|---|---:|---|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.value.toFixed(2)} | ${r.unit} | ${r.baseline?.toFixed(0) ?? ""} | ${r.ratio?.toFixed(2) ?? ""} |`,
    ),
  ].join("\n");
  console.log(`\n${table}`);
  writeDocsTable("bench", table);
  console.log(`\nwrote ${out}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
