// `npm run bench:cluster`: three brokers on this machine, each its own
// process with its own data dir, HTTP port and gRPC cluster port, loaded
// with batch produce on all three at once. Reports end-to-end msg/s (accepted
// → visible at the owners), produce→visible latency (local and remote
// owner), and the WAL backlog sampled every 500 ms (it must stay bounded).
// Merges its rows (name prefix "cluster_") into bench/results.json.
//
// The three processes have no shared metastore service: each builds the
// same in-memory one from its arguments (bench/lib/local-cluster.ts), hence
// the same owners. Membership does not change during the run.
//
// BENCH_SECONDS (default 10) sets the load phase.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { repoRoot } from "../broker/test/harness/process.ts";
import { load } from "./lib/load.ts";
import { hwmSum, LocalCluster, pendingRecords, produced } from "./lib/local-cluster.ts";

interface Result {
  name: string;
  value: number;
  unit: string;
  baseline: number | null;
  ratio: number | null;
}

const topics = [
  { name: "bench", partitions: 6 },
  { name: "latency", partitions: 3 },
];

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const results: Result[] = [];
const record = (name: string, value: number, unit: string) => {
  results.push({ name, value, unit, baseline: null, ratio: null });
  process.stderr.write(`  ${name}: ${value.toFixed(2)} ${unit}\n`);
};

async function main(): Promise<void> {
  process.stderr.write(
    `narad cluster bench: 3 broker processes, ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${seconds}s load\n`,
  );
  const cluster = await LocalCluster.start({ ids: ["a", "b", "c"], topics });
  try {
    const owners = cluster.info("a").owners.latency ?? [];
    const urls = cluster.urls;

    // Load: binary batches of 100 × 1 KiB keyless records (spread over all
    // partitions, so two thirds of every node's records go to a peer).
    const perBatch = 100;
    const body = encodeBinaryBatch(
      Array.from({ length: perBatch }, () => ({
        partition: -1,
        key: Buffer.alloc(0),
        payload: Buffer.alloc(1024, "x"),
      })),
    );
    process.stderr.write(
      `batch produce on all 3 nodes: ${perBatch} x 1 KiB per request, 4 connections each\n`,
    );
    const backlog: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const p = await Promise.all(urls.map(pendingRecords));
        backlog.push(p.reduce((a, b) => a + b, 0));
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const t0 = performance.now();
    const loads = await Promise.all(
      urls.map((u) =>
        load({
          url: `${u}/v1/topics/bench/produce-batch`,
          connections: 4,
          seconds,
          body,
          headers: { "content-type": "application/vnd.narad.batch" },
        }),
      ),
    );
    const loadMs = performance.now() - t0;
    for (const l of loads) {
      if (l.non2xx > 0 || l.errors > 0) throw new Error(`produce: ${l.non2xx} non-2xx, ${l.errors} errors`);
    }
    const accepted = (await Promise.all(urls.map((u) => produced(u)))).reduce((a, b) => a + b, 0);
    for (;;) {
      if ((await hwmSum(urls[0]!, "bench")) >= accepted) break;
      if (performance.now() - t0 > loadMs + 300_000) throw new Error("backlog not visible after 300 s");
      await new Promise((r) => setTimeout(r, 50));
    }
    const visibleMs = performance.now() - t0;
    sampling = false;
    await sampler;
    // Requests in flight when the load stopped may be accepted after the
    // count above: compare with the count once every WAL is drained.
    for (;;) {
      if ((await Promise.all(urls.map(pendingRecords))).every((n) => n === 0)) break;
      if (performance.now() - t0 > loadMs + 300_000) throw new Error("WAL not drained after 300 s");
      await new Promise((r) => setTimeout(r, 50));
    }
    const visible = await hwmSum(urls[0]!, "bench");
    const acceptedAll = (await Promise.all(urls.map((u) => produced(u)))).reduce((a, b) => a + b, 0);
    if (visible !== acceptedAll)
      throw new Error(`visible ${visible} != accepted ${acceptedAll} (duplicates?)`);
    record("cluster_accepted_msg_per_sec", accepted / (loadMs / 1000), "msg/s");
    record("cluster_end_to_end_msg_per_sec", accepted / (visibleMs / 1000), "msg/s");
    record("cluster_backlog_visible_after_load_ms", visibleMs - loadMs, "ms");
    record("cluster_wal_backlog_max_records", Math.max(...backlog), "records");
    // Samples taken while the load ran (every 500 ms): the backlog's growth rate under full load.
    const during = backlog.slice(0, Math.max(1, Math.floor(loadMs / 500)));
    record(
      "cluster_wal_backlog_growth_records_per_sec",
      (during[during.length - 1]! - during[0]!) / (loadMs / 1000),
      "records/s",
    );
    process.stderr.write(`  WAL backlog samples (sum of 3 nodes, every 500 ms): ${backlog.join(" ")}\n`);

    // Sustained load: 60% of the end-to-end rate just measured, offered at a
    // fixed rate for twice the load phase. The WAL backlog must stay bounded
    // (no growth trend) when the cluster is not overloaded.
    const sustainedMsgPerSec = 0.6 * (accepted / (visibleMs / 1000));
    const perNodeRate = Math.max(1, Math.round(sustainedMsgPerSec / perBatch / urls.length));
    process.stderr.write(
      `sustained: ${perNodeRate * perBatch * urls.length} msg/s offered for ${2 * seconds}s (60% of end-to-end)\n`,
    );
    const steady: number[] = [];
    let steadySampling = true;
    const steadySampler = (async () => {
      while (steadySampling) {
        const p = await Promise.all(urls.map(pendingRecords));
        steady.push(p.reduce((a, b) => a + b, 0));
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const sustainedLoads = await Promise.all(
      urls.map((u) =>
        load({
          url: `${u}/v1/topics/bench/produce-batch`,
          connections: 2,
          seconds: 2 * seconds,
          body,
          overallRate: perNodeRate,
          headers: { "content-type": "application/vnd.narad.batch" },
        }),
      ),
    );
    steadySampling = false;
    await steadySampler;
    for (const l of sustainedLoads) {
      if (l.non2xx > 0 || l.errors > 0) throw new Error(`sustained: ${l.non2xx} non-2xx, ${l.errors} errors`);
    }
    const half = Math.floor(steady.length / 2);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    record("cluster_sustained_offered_msg_per_sec", perNodeRate * perBatch * urls.length, "msg/s");
    record("cluster_sustained_backlog_max_records", Math.max(...steady), "records");
    record("cluster_sustained_backlog_first_half_mean", mean(steady.slice(0, half)), "records");
    record("cluster_sustained_backlog_second_half_mean", mean(steady.slice(half)), "records");
    process.stderr.write(`  sustained WAL backlog samples: ${steady.join(" ")}\n`);

    // Latency: produce on node a, poll the message through node a, for a
    // partition a owns (local commit) and one a peer owns (CommitBatch + Read RPC).
    for (const kind of ["local", "remote"] as const) {
      const partition = owners.findIndex((o) => (kind === "local" ? o === "a" : o !== "a"));
      const lat: number[] = [];
      let offset = 0;
      for (let i = 0; i < 200; i++) {
        const t = performance.now();
        const res = await fetch(`${urls[0]}/v1/topics/latency/produce?partition=${partition}`, {
          method: "POST",
          body: `m${i}`,
        });
        if (res.status !== 202) throw new Error(`latency produce: ${res.status}`);
        for (;;) {
          const r = await fetch(
            `${urls[0]}/v1/topics/latency/consume?partition=${partition}&offset=${offset}`,
          );
          await r.arrayBuffer();
          if (r.status === 200) break;
        }
        offset++;
        lat.push(performance.now() - t);
      }
      lat.sort((x, y) => x - y);
      record(`cluster_produce_to_visible_${kind}_p50_ms`, lat[Math.floor(lat.length * 0.5)]!, "ms");
      record(`cluster_produce_to_visible_${kind}_p99_ms`, lat[Math.floor(lat.length * 0.99)]!, "ms");
    }
  } finally {
    await cluster.stop();
  }

  const out = join(repoRoot, "bench/results.json");
  const previous = existsSync(out) ? (JSON.parse(readFileSync(out, "utf8")) as Result[]) : [];
  const merged = [...previous.filter((r) => !r.name.startsWith("cluster_")), ...results];
  writeFileSync(out, `${JSON.stringify(merged, null, 2)}\n`);
  console.log("\n| benchmark | value | unit |\n|---|---:|---|");
  for (const r of results) console.log(`| ${r.name} | ${r.value.toFixed(2)} | ${r.unit} |`);
  console.log(`\nmerged into ${out}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
