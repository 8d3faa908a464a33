// `npm run bench:replication`: what synchronous partition replication
// (docs/replication.md) costs, on three broker processes on this machine
// (bench/lib/local-cluster.ts; each data dir gets its volume-id marker first
// and every process knows every member's volume id, so the replicated
// records agree).
//
// 1. Produce throughput and latency in four cells, measured in the same run:
//    rf1+acks=wal (the baseline), rf1+acks=all, rf3+acks=wal, rf3+acks=all.
//    Topics `rf1` (factor 1) and `rf3` (factor 3, min_insync_replicas 2)
//    have the same partitions, led evenly by the three brokers. Two loads,
//    each spread over the three brokers: single 1 KiB produce, and
//    100 × 1 KiB binary batches. Each cell: an unmeasured warm-up, the
//    WAL drained, the measured phase, the WAL drained again (timed: the
//    acks=wal backlog's cost). Rounds alternate the cell order so machine
//    drift shows; ratios are to the baseline of the same round.
//    Ledger per cell: the partitions' HWMs grow by exactly what the brokers
//    accepted, and that is at least every acknowledged record (at most the
//    requests in flight when the load stopped more).
// 2. Produce → visible at the leader (acks=wal, one sequential producer),
//    rf1 against rf3, with the leader local to the producer's broker and
//    remote; and the acks=all answer time, unloaded. Samples alternate.
// 3. Recovery after a volume loss: an rf3 partition filled with
//    BENCH_RECOVERY_MB (default 256; 32 with BENCH_QUICK=1) of acks=all
//    batches carrying unique ids, one follower kill -9'd, its data dir
//    deleted, started again on an empty dir with a new volume id (the other
//    processes learn it through their admin hook). Measured: the time until
//    its copy equals the leader's (byte for byte), until the leader's ISR
//    holds it again on its new volume, and the catch-up rate. Then every
//    acknowledged id is read back from the leader: each exactly once.
//
// Writes bench/replication-results.json, bench/replication-series.json
// (every round of every cell) and the bench-replication table of
// docs/benchmarks.md. Anything that breaks a ledger (lost or duplicated
// records, errors, stalls) is listed and makes the run exit 1.
//
// BENCH_SECONDS (default 8), BENCH_WARMUP_SECONDS (default 3), BENCH_ROUNDS
// (default 2), BENCH_RECOVERY_MB, BENCH_QUICK=1 (short phases, small fill).

import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import type { ReplicaAssignment } from "../packages/api/src/v1alpha1/replication.ts";
import { loadSpread, type SpreadLoadResult } from "./lib/load.ts";
import {
  type BenchTopic,
  hwmSum,
  LocalCluster,
  pendingRecords,
  produced,
  writeVolumeMarker,
} from "./lib/local-cluster.ts";
import { Report, runNote, writeDocsTable, writeSeries } from "./lib/report.ts";

const MiB = 1 << 20;
const quick = process.env.BENCH_QUICK === "1";
const seconds = Number(process.env.BENCH_SECONDS ?? (quick ? 3 : 8));
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? (quick ? 1 : 3));
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const recoveryMiB = Number(process.env.BENCH_RECOVERY_MB ?? (quick ? 32 : 256));
const latencySamples = Number(process.env.BENCH_LATENCY_SAMPLES ?? (quick ? 30 : 150));
/** Connections per broker. */
const singleConnections = 16;
const batchConnections = 4;
const partitions = 6;
const drainTimeoutMs = 300_000;

const topics: BenchTopic[] = [
  { name: "rf1", partitions, replication_factor: 1 },
  { name: "rf3", partitions, replication_factor: 3, min_insync_replicas: 2 },
  { name: "fill", partitions: 1, replication_factor: 3, min_insync_replicas: 2 },
];

type Acks = "wal" | "all";
interface Cell {
  topic: "rf1" | "rf3";
  acks: Acks;
  /** Connections × this (default 1): does acks=all gain from more requests in flight? */
  connectionsFactor?: number;
}
const cells: Cell[] = [
  { topic: "rf1", acks: "wal" },
  { topic: "rf1", acks: "all" },
  { topic: "rf3", acks: "wal" },
  { topic: "rf3", acks: "all" },
  { topic: "rf3", acks: "all", connectionsFactor: 4 },
];
const cellName = (c: Cell) =>
  `${c.topic}_acks_${c.acks}${c.connectionsFactor === undefined ? "" : `_x${c.connectionsFactor}_connections`}`;

interface LoadKind {
  name: "single" | "batch";
  /** Records per request. */
  perRequest: number;
  connections: number;
  body: Buffer;
  path(c: Cell): string;
  headers?: Record<string, string>;
}

const payload1k = Buffer.alloc(1024, 0x61);
const loads: LoadKind[] = [
  {
    name: "single",
    perRequest: 1,
    connections: singleConnections,
    body: payload1k,
    path: (c) => `/v1/topics/${c.topic}/produce?acks=${c.acks}`,
  },
  {
    name: "batch",
    perRequest: 100,
    connections: batchConnections,
    body: encodeBinaryBatch(
      Array.from({ length: 100 }, () => ({ partition: -1, key: Buffer.alloc(0), payload: payload1k })),
    ),
    path: (c) => `/v1/topics/${c.topic}/produce-batch?acks=${c.acks}`,
    headers: { "content-type": "application/vnd.narad.batch" },
  },
];

/** One measured cell of one round. */
interface CellRun {
  load: LoadKind["name"];
  round: number;
  cell: string;
  msgPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** From the end of the load until every accepted record was committed (and replicated). */
  drainMs: number;
  /** Accepted records over load + drain. */
  endToEndMsgPerSec: number;
  acknowledged: number;
  accepted: number;
  committed: number;
  statusCodes: Record<string, number>;
  errors: number;
  loadAverage: number;
}

const anomalies: string[] = [];
const anomaly = (what: string) => {
  anomalies.push(what);
  process.stderr.write(`  !! ${what}\n`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function totalProduced(urls: string[], topic: string): Promise<number> {
  return (await Promise.all(urls.map((u) => produced(u, topic)))).reduce((a, b) => a + b, 0);
}

/** Waits until no WAL holds a record and `topic`'s HWMs cover everything accepted; the wait in ms. */
async function drain(urls: string[], topic: string, what: string): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const pending = (await Promise.all(urls.map(pendingRecords))).reduce((a, b) => a + b, 0);
    if (pending === 0) {
      const [hwm, acc] = await Promise.all([hwmSum(urls[0]!, topic), totalProduced(urls, topic)]);
      if (hwm >= acc) return performance.now() - t0;
    }
    if (performance.now() - t0 > drainTimeoutMs) {
      anomaly(`${what}: WAL not drained after ${drainTimeoutMs / 1000} s (${pending} records pending)`);
      return performance.now() - t0;
    }
    await sleep(50);
  }
}

async function runCell(cluster: LocalCluster, kind: LoadKind, cell: Cell, round: number): Promise<CellRun> {
  const urls = cluster.urls;
  const label = `${kind.name} ${cellName(cell)} round ${round + 1}`;
  const connections = kind.connections * (cell.connectionsFactor ?? 1);
  process.stderr.write(`${label}: ${connections} connections on each of 3 brokers\n`);
  await drain(urls, cell.topic, `${label} (before)`);
  const hwm0 = await hwmSum(urls[0]!, cell.topic);
  const acc0 = await totalProduced(urls, cell.topic);
  const spread = (s: number) =>
    loadSpread({
      targets: urls.map((u) => ({ url: `${u}${kind.path(cell)}`, connections })),
      seconds: s,
      body: kind.body,
      ...(kind.headers === undefined ? {} : { headers: kind.headers }),
    });
  const warm = await spread(warmupSeconds);
  await drain(urls, cell.topic, `${label} (after warm-up)`);
  const measured: SpreadLoadResult = await spread(seconds);
  const drainMs = await drain(urls, cell.topic, label);
  const hwm1 = await hwmSum(urls[0]!, cell.topic);
  const acc1 = await totalProduced(urls, cell.topic);

  // Ledger. Every acknowledged record is committed, and at most the requests
  // unanswered (in flight when the load stopped, or refused) more: nothing
  // lost, nothing twice. With acks=wal the brokers' accepted count (taken at
  // the 202) must equal what was committed; with acks=all it is taken at the
  // 200, so records whose client stopped waiting are committed uncounted.
  const acknowledged = (warm.ok + measured.ok) * kind.perRequest;
  const accepted = acc1 - acc0;
  const committed = hwm1 - hwm0;
  const unanswered =
    (2 * 3 * connections + warm.non2xx + warm.errors + measured.non2xx + measured.errors) * kind.perRequest;
  if (committed < acknowledged)
    anomaly(`${label}: ${acknowledged} records acknowledged, only ${committed} committed (lost)`);
  if (committed > acknowledged + unanswered)
    anomaly(
      `${label}: ${committed} committed for ${acknowledged} acknowledged and at most ${unanswered} unanswered (duplicates)`,
    );
  if (cell.acks === "wal" && committed !== accepted)
    anomaly(`${label}: partitions committed ${committed} records, brokers accepted ${accepted}`);
  if (cell.acks === "all" && (accepted < acknowledged || accepted > acknowledged + unanswered))
    anomaly(`${label}: brokers counted ${accepted} records answered, the clients ${acknowledged}`);
  for (const r of [warm, measured])
    if (r.non2xx > 0 || r.errors > 0)
      anomaly(`${label}: ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors`);
  const msgPerSec = measured.requestsPerSec * kind.perRequest;
  const measuredRecords = measured.ok * kind.perRequest;
  const run: CellRun = {
    load: kind.name,
    round,
    cell: cellName(cell),
    msgPerSec,
    p50Ms: measured.p50Ms,
    p99Ms: measured.p99Ms,
    drainMs,
    endToEndMsgPerSec: measuredRecords / (measured.seconds + drainMs / 1000),
    acknowledged,
    accepted,
    committed,
    statusCodes: measured.statusCodes,
    errors: measured.errors,
    loadAverage: loadavg()[0] ?? 0,
  };
  process.stderr.write(
    `  ${msgPerSec.toFixed(0)} msg/s, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms, drained ${drainMs.toFixed(0)} ms after; ledger ${acknowledged} acked / ${accepted} accepted / ${committed} committed\n`,
  );
  return run;
}

// ---------------------------------------------------------------------------
// Produce → visible, and the acks=all answer, one request at a time.

interface LatencyProbe {
  name: string;
  topic: string;
  partition: number;
  /** Broker the producer talks to. */
  via: string;
  /** The partition's leader: where the record must become readable. */
  leader: string;
  acks: Acks;
  next: number;
  samples: number[];
}

async function partitionHwm(url: string, topic: string, partition: number): Promise<number> {
  const r = (await (await fetch(`${url}/v1/topics/${topic}?partition=${partition}`)).json()) as {
    partition_stats: Array<{ partition: number; high_watermark: number }>;
  };
  const st = r.partition_stats.find((p) => p.partition === partition) ?? r.partition_stats[0];
  return st?.high_watermark ?? 0;
}

async function probeOnce(cluster: LocalCluster, p: LatencyProbe): Promise<void> {
  const t = performance.now();
  const res = await fetch(
    `${cluster.url(p.via)}/v1/topics/${p.topic}/produce?partition=${p.partition}&acks=${p.acks}`,
    { method: "POST", body: `m${p.next}` },
  );
  await res.arrayBuffer();
  const want = p.acks === "all" ? 200 : 202;
  if (res.status !== want) {
    anomaly(`${p.name}: produce answered ${res.status}`);
    return;
  }
  if (p.acks === "wal") {
    const deadline = t + 30_000;
    for (;;) {
      const r = await fetch(
        `${cluster.url(p.leader)}/v1/topics/${p.topic}/consume?partition=${p.partition}&offset=${p.next}`,
      );
      await r.arrayBuffer();
      if (r.status === 200) break;
      if (performance.now() > deadline) {
        anomaly(`${p.name}: offset ${p.next} not visible at ${p.leader} after 30 s`);
        return;
      }
    }
  }
  p.next++;
  p.samples.push(performance.now() - t);
}

async function latencies(cluster: LocalCluster): Promise<LatencyProbe[]> {
  const probes: LatencyProbe[] = [];
  for (const topic of ["rf1", "rf3"]) {
    const owners = cluster.info("a").owners[topic]!;
    for (const where of ["local", "remote"] as const) {
      const partition = owners.findIndex((o) => (where === "local" ? o === "a" : o !== "a"));
      const leader = owners[partition]!;
      for (const acks of ["wal", "all"] as const)
        probes.push({
          name: acks === "wal" ? `visible_${topic}_${where}` : `answer_acks_all_${topic}_${where}`,
          topic,
          partition,
          via: "a",
          leader,
          acks,
          next: 0,
          samples: [],
        });
    }
  }
  await drain(cluster.urls, "rf1", "latency (before)");
  await drain(cluster.urls, "rf3", "latency (before)");
  for (const p of probes) {
    p.next = await partitionHwm(cluster.url(p.leader), p.topic, p.partition);
    // An answer for the offsets taken by the wal probe of the same partition is the other probe's.
  }
  process.stderr.write(`latency: ${latencySamples} sequential samples per probe, probes alternating\n`);
  // Two probes share a partition (wal and all): keep each one's offset in step.
  for (let i = 0; i < latencySamples; i++) {
    for (const p of probes) {
      const twin = probes.find((q) => q !== p && q.topic === p.topic && q.partition === p.partition);
      await probeOnce(cluster, p);
      if (twin !== undefined) twin.next = p.next;
    }
  }
  return probes;
}

// ---------------------------------------------------------------------------
// Recovery after a volume loss.

function logFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith(".log"))
      .sort()
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

function logBytes(dir: string): number {
  let n = 0;
  for (const f of logFiles(dir)) {
    try {
      n += statSync(f).size;
    } catch {
      // a segment removed between the listing and the stat
    }
  }
  return n;
}

function logHash(dir: string): string {
  const h = createHash("sha256");
  for (const f of logFiles(dir)) h.update(readFileSync(f));
  return h.digest("hex");
}

interface RecoveryResult {
  fillMiB: number;
  fillMsgPerSec: number;
  fillMiBPerSec: number;
  acknowledged: number;
  inDoubt: number;
  leader: string;
  victim: string;
  leaderLogBytes: number;
  readyMs: number;
  isrShrunkMs: number | null;
  copyEqualMs: number;
  isrBackMs: number;
  catchUpMiBPerSec: number;
  byteIdentical: boolean;
  readBack: { records: number; missing: number; duplicated: number; unknown: number };
}

async function recovery(cluster: LocalCluster): Promise<RecoveryResult> {
  const record = cluster.info("a").records.fill?.[0];
  if (record === undefined || record === null || record.leader === null)
    throw new Error("the fill partition has no replicated record");
  const leader = record.leader;
  const [victim, other] = record.replicas.filter((m) => m !== leader) as [string, string];
  const leaderUrl = cluster.url(leader);
  const partDir = (m: string) => join(cluster.dirs.get(m)!, "topics", "fill", "p00000");

  // Fill: 100 × 1 KiB records per batch, unique ids, acks=all at the leader, 4 in flight.
  const perBatch = 100;
  const target = recoveryMiB * MiB;
  const pad = "x".repeat(1000);
  let nextId = 0;
  const acked = new Set<number>();
  const inDoubt = new Set<number>();
  let bytes = 0;
  process.stderr.write(
    `recovery: filling fill/0 (leader ${leader}, followers ${victim} ${other}) with ${recoveryMiB} MiB, acks=all\n`,
  );
  const t0 = performance.now();
  const worker = async () => {
    while (bytes < target) {
      const ids = Array.from({ length: perBatch }, () => nextId++);
      const body = encodeBinaryBatch(
        ids.map((id) => ({
          partition: 0,
          key: Buffer.alloc(0),
          payload: Buffer.from(JSON.stringify({ id, pad }).padEnd(1024, " ")),
        })),
      );
      bytes += body.length;
      const res = await fetch(`${leaderUrl}/v1/topics/fill/produce-batch?acks=all`, {
        method: "POST",
        body,
        headers: { "content-type": "application/vnd.narad.batch" },
      }).catch((err: unknown) => err);
      if (res instanceof Response && res.status === 200) {
        await res.arrayBuffer();
        for (const id of ids) acked.add(id);
      } else {
        const why = res instanceof Response ? `${res.status} ${await res.text()}` : String(res);
        anomaly(`recovery fill: a batch of ${perBatch} answered ${why.slice(0, 300)}`);
        for (const id of ids) inDoubt.add(id);
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const fillSeconds = (performance.now() - t0) / 1000;
  await drain(cluster.urls, "fill", "recovery fill");
  const leaderBytes = logBytes(partDir(leader));
  const settle = performance.now();
  while (logBytes(partDir(victim)) !== leaderBytes || logBytes(partDir(other)) !== leaderBytes) {
    if (performance.now() - settle > drainTimeoutMs) {
      anomaly("recovery: the followers did not catch up with the fill");
      break;
    }
    await sleep(100);
  }
  const leaderHash = logHash(partDir(leader));
  process.stderr.write(
    `  ${acked.size} records acknowledged in ${fillSeconds.toFixed(1)} s; leader log ${(leaderBytes / MiB).toFixed(1)} MiB; both followers equal\n`,
  );

  // The loss: kill -9, the volume gone, back on an empty dir with a new volume id.
  await cluster.kill9(victim);
  const victimDir = cluster.dirs.get(victim)!;
  rmSync(victimDir, { recursive: true, force: true });
  const newVolume = writeVolumeMarker(victimDir, victim);
  for (const m of [leader, other])
    await cluster.command(m, { op: "setVolumeId", member: victim, volumeId: newVolume });
  process.stderr.write(`  ${victim} killed, its data dir deleted; restarting on volume ${newVolume}\n`);
  const start = performance.now();
  const leaderRecord = async (): Promise<ReplicaAssignment | null> =>
    (await cluster.command(leader, { op: "record", topic: "fill", partition: 0 })).record ?? null;
  const inIsr = (r: ReplicaAssignment | null, volume?: string) =>
    r?.isr.some((m) => m.member === victim && (volume === undefined || m.volumeId === volume)) ?? false;
  let isrShrunkMs: number | null = null;
  // Watch the leader's ISR while the process starts (a shrink can come before /readyz).
  let watching = true;
  const watcher = (async () => {
    while (watching && isrShrunkMs === null) {
      if (!inIsr(await leaderRecord())) isrShrunkMs = performance.now() - start;
      await sleep(20);
    }
  })();
  await cluster.startMember(victim, { [victim]: newVolume });
  const readyMs = performance.now() - start;
  let copyEqualMs: number | null = null;
  let isrBackMs: number | null = null;
  for (;;) {
    const now = performance.now() - start;
    if (copyEqualMs === null && logBytes(partDir(victim)) === leaderBytes) copyEqualMs = now;
    if (isrBackMs === null && inIsr(await leaderRecord(), newVolume)) isrBackMs = performance.now() - start;
    if (copyEqualMs !== null && isrBackMs !== null) break;
    if (now > 600_000) {
      anomaly(
        `recovery: after 600 s the new copy has ${logBytes(partDir(victim))} of ${leaderBytes} bytes; ISR back: ${isrBackMs !== null}`,
      );
      break;
    }
    await sleep(20);
  }
  watching = false;
  await watcher;
  const httpIsr = (
    (await (await fetch(`${leaderUrl}/v1/topics/fill?partition=0`)).json()) as {
      partition_stats: Array<{ isr?: string[] }>;
    }
  ).partition_stats[0]?.isr;
  if (!httpIsr?.includes(victim)) anomaly(`recovery: the leader's GET shows isr ${JSON.stringify(httpIsr)}`);
  const byteIdentical = logHash(partDir(victim)) === leaderHash && logHash(partDir(other)) === leaderHash;
  if (!byteIdentical) anomaly("recovery: the copies are not byte-identical to the leader's log");

  // Every acknowledged id, read back from the leader: exactly once.
  const seen = new Map<number, number>();
  let offset = 0;
  let records = 0;
  for (;;) {
    const r = (await (
      await fetch(`${leaderUrl}/v1/topics/fill/records?partition=0&offset=${offset}&limit=1000`)
    ).json()) as { next_offset: number; records: Array<{ payload: { id: number } }> };
    if (r.records.length === 0) break;
    for (const rec of r.records) seen.set(rec.payload.id, (seen.get(rec.payload.id) ?? 0) + 1);
    records += r.records.length;
    offset = r.next_offset;
  }
  let missing = 0;
  for (const id of acked) if (!seen.has(id)) missing++;
  let duplicated = 0;
  let unknown = 0;
  for (const [id, n] of seen) {
    if (n > 1) duplicated++;
    if (!acked.has(id) && !inDoubt.has(id)) unknown++;
  }
  if (missing > 0) anomaly(`recovery: ${missing} acknowledged records missing at the leader`);
  if (duplicated > 0) anomaly(`recovery: ${duplicated} records read more than once`);
  if (unknown > 0) anomaly(`recovery: ${unknown} records nobody produced`);
  const copyMs = (copyEqualMs ?? performance.now() - start) - readyMs;
  return {
    fillMiB: bytes / MiB,
    fillMsgPerSec: acked.size / fillSeconds,
    fillMiBPerSec: bytes / MiB / fillSeconds,
    acknowledged: acked.size,
    inDoubt: inDoubt.size,
    leader,
    victim,
    leaderLogBytes: leaderBytes,
    readyMs,
    isrShrunkMs,
    copyEqualMs: copyEqualMs ?? Number.NaN,
    isrBackMs: isrBackMs ?? Number.NaN,
    catchUpMiBPerSec: leaderBytes / MiB / (Math.max(1, copyMs) / 1000),
    byteIdentical,
    readBack: { records, missing, duplicated, unknown },
  };
}

// ---------------------------------------------------------------------------

function checkPlacement(cluster: LocalCluster): void {
  const views = cluster.peers.map((p) => JSON.stringify(cluster.info(p.id).records));
  if (new Set(views).size !== 1) throw new Error("the processes disagree on the replicated records");
  const info = cluster.info("a");
  for (const t of ["rf1", "rf3"]) {
    const led = new Map<string, number>();
    for (const o of info.owners[t]!) led.set(o, (led.get(o) ?? 0) + 1);
    if (led.size !== 3 || [...led.values()].some((n) => n !== partitions / 3))
      throw new Error(`${t}: partitions not led evenly: ${JSON.stringify(info.owners[t])}`);
  }
  for (const r of info.records.rf3!) {
    if (r === null || r.replicas.length !== 3 || r.isr.length !== 3 || r.isr.some((m) => m.volumeId === ""))
      throw new Error(`rf3: record without three replicas on known volumes: ${JSON.stringify(r)}`);
  }
}

async function main(): Promise<void> {
  const load0 = loadavg()[0] ?? 0;
  process.stderr.write(
    `narad replication bench: 3 broker processes, ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}; ${rounds} rounds of ${warmupSeconds} s warm-up + ${seconds} s per cell; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}\n`,
  );
  const logDir = mkdtempSync(join(tmpdir(), "narad-repl-bench-logs-"));
  process.stderr.write(`broker logs (warn and above): ${logDir}/{a,b,c}.log\n`);
  const cluster = await LocalCluster.start({
    ids: ["a", "b", "c"],
    topics,
    args: ["--replication", "on"],
    volumeIds: true,
    prefix: "narad-repl-bench",
    logDir,
  });
  const runs: CellRun[] = [];
  let probes: LatencyProbe[] = [];
  let rec: RecoveryResult | undefined;
  try {
    checkPlacement(cluster);
    for (const kind of loads) {
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? cells : [...cells].reverse();
        for (const cell of order) runs.push(await runCell(cluster, kind, cell, round));
      }
    }
    probes = await latencies(cluster);
    rec = await recovery(cluster);
  } finally {
    await cluster.stop();
  }
  const load1 = loadavg()[0] ?? 0;

  // Results: means over the rounds; ratios to the baseline (rf1, acks=wal).
  const report = new Report();
  const rows: string[] = [];
  for (const kind of loads) {
    const of = (c: Cell) => runs.filter((r) => r.load === kind.name && r.cell === cellName(c));
    const base = of(cells[0]!);
    const baseMean = (f: (r: CellRun) => number) => mean(base.map(f));
    for (const c of cells) {
      const rs = of(c);
      const isBase = c === cells[0];
      const metric = (f: (r: CellRun) => number, unit: string, suffix: string) =>
        report.record(
          `${kind.name}_${cellName(c)}_${suffix}`,
          mean(rs.map(f)),
          unit,
          isBase ? null : baseMean(f),
        );
      metric((r) => r.msgPerSec, "msg/s", "msg_per_sec");
      metric((r) => r.p50Ms, "ms", "p50_ms");
      metric((r) => r.p99Ms, "ms", "p99_ms");
      metric((r) => r.endToEndMsgPerSec, "msg/s", "end_to_end_msg_per_sec");
      // The table: each round's value and its ratio to the same round's baseline.
      const perRound = (f: (r: CellRun) => number, digits: number) =>
        rs.map((r) => f(r).toFixed(digits)).join(" / ");
      const ratios = (f: (r: CellRun) => number) =>
        isBase
          ? ""
          : rs
              .map((r) => {
                const b = base.find((x) => x.round === r.round);
                return b === undefined ? "?" : (f(r) / f(b)).toFixed(2);
              })
              .join(" / ");
      const spread = (f: (r: CellRun) => number) => {
        const xs = rs.map(f);
        return `${((100 * (Math.max(...xs) - Math.min(...xs))) / Math.max(1e-9, mean(xs))).toFixed(0)}%`;
      };
      rows.push(
        `| ${kind.name} (${kind.connections * 3 * (c.connectionsFactor ?? 1)} conn.) | ${c.topic} | ${c.acks} | ${perRound((r) => r.msgPerSec, 0)} (±${spread((r) => r.msgPerSec)}) | ${ratios((r) => r.msgPerSec)} | ${perRound((r) => r.p50Ms, 0)} | ${ratios((r) => r.p50Ms)} | ${perRound((r) => r.p99Ms, 0)} | ${ratios((r) => r.p99Ms)} | ${perRound((r) => r.drainMs / 1000, 1)} | ${perRound((r) => r.endToEndMsgPerSec, 0)} |`,
      );
    }
  }
  const latRows: string[] = [];
  for (const p of probes) {
    const s = [...p.samples].sort((a, b) => a - b);
    if (s.length === 0) continue;
    const base =
      p.topic === "rf3"
        ? probes.find((q) => q.topic === "rf1" && q.name === p.name.replace("rf3", "rf1"))
        : undefined;
    const bs = base === undefined ? undefined : [...base.samples].sort((a, b) => a - b);
    report.record(`${p.name}_p50_ms`, pct(s, 0.5), "ms", bs === undefined ? null : pct(bs, 0.5));
    report.record(`${p.name}_p99_ms`, pct(s, 0.99), "ms", bs === undefined ? null : pct(bs, 0.99));
    latRows.push(
      `| ${p.acks === "wal" ? "produce (acks=wal) → readable at the leader" : "acks=all produce → answer"} | ${p.topic} | ${p.leader === p.via ? "local" : "remote"} | ${pct(s, 0.5).toFixed(1)} | ${bs === undefined ? "" : (pct(s, 0.5) / pct(bs, 0.5)).toFixed(2)} | ${pct(s, 0.99).toFixed(1)} | ${bs === undefined ? "" : (pct(s, 0.99) / pct(bs, 0.99)).toFixed(2)} |`,
    );
  }
  if (rec !== undefined) {
    report.record("recovery_fill_mib", rec.fillMiB, "MiB");
    report.record("recovery_fill_rf3_acks_all_mib_per_sec", rec.fillMiBPerSec, "MiB/s");
    report.record("recovery_restart_ready_ms", rec.readyMs, "ms");
    if (rec.isrShrunkMs !== null) report.record("recovery_isr_shrunk_ms", rec.isrShrunkMs, "ms");
    report.record("recovery_copy_equal_ms", rec.copyEqualMs, "ms");
    report.record("recovery_isr_back_ms", rec.isrBackMs, "ms");
    report.record("recovery_catch_up_mib_per_sec", rec.catchUpMiBPerSec, "MiB/s");
  }
  report.writeResults("replication-results.json");
  const note = runNote(
    `${rounds} rounds of ${warmupSeconds} s warm-up + ${seconds} s per cell, alternating order; load average ${load0.toFixed(1)} at the start`,
  );
  writeSeries("replication-series.json", note, {
    runs,
    latency: probes.map((p) => {
      const s = [...p.samples].sort((a, b) => a - b);
      return {
        name: p.name,
        n: s.length,
        p50: pct(s, 0.5),
        p90: pct(s, 0.9),
        p99: pct(s, 0.99),
        max: s.at(-1),
      };
    }),
    recovery: rec,
    anomalies,
    loadAverage: { start: load0, end: load1 },
  });

  const table = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}; three broker processes; ${rounds} rounds of ${warmupSeconds} s warm-up + ${seconds} s per cell, the order alternating; load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end. Values per round (round 1 / round 2 / …), ratios to rf1 + acks=wal of the same round; ± is the spread between rounds (max − min over the mean).`,
    "",
    "| load (connections) | topic | acks | msg/s | × | p50 ms | × | p99 ms | × | drained after (s) | end to end msg/s |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    `One sequential producer on broker a, ${latencySamples} samples each, alternating; local: a leads the partition, remote: another broker does. × is rf3 / rf1.`,
    "",
    "| what | topic | leader | p50 ms | × | p99 ms | × |",
    "|---|---|---|---:|---:|---:|---:|",
    ...latRows,
    ...(rec === undefined
      ? []
      : [
          "",
          `Volume loss: fill/0 at factor 3 filled with ${rec.fillMiB.toFixed(0)} MiB (${rec.acknowledged} records acknowledged with acks=all at ${rec.fillMiBPerSec.toFixed(1)} MiB/s), follower ${rec.victim} killed with SIGKILL, its data dir deleted, restarted on an empty dir with a new volume id. Times from the restart.`,
          "",
          "| measure | value |",
          "|---|---:|",
          `| process ready | ${(rec.readyMs / 1000).toFixed(2)} s |`,
          `| leader's ISR drops the old volume | ${rec.isrShrunkMs === null ? "not seen" : `${(rec.isrShrunkMs / 1000).toFixed(2)} s`} |`,
          `| new copy equals the leader's log (${(rec.leaderLogBytes / MiB).toFixed(0)} MiB) | ${(rec.copyEqualMs / 1000).toFixed(2)} s |`,
          `| leader's ISR holds it again, on the new volume | ${(rec.isrBackMs / 1000).toFixed(2)} s |`,
          `| catch-up rate (from ready) | ${rec.catchUpMiBPerSec.toFixed(1)} MiB/s |`,
          `| copies byte-identical; acknowledged records read back once each | ${rec.byteIdentical ? "yes" : "NO"}; ${rec.readBack.missing === 0 && rec.readBack.duplicated === 0 ? "yes" : "NO"} (${rec.readBack.records} read) |`,
        ]),
    "",
    anomalies.length === 0
      ? "Ledger: every cell committed exactly what the brokers accepted, at least every acknowledged record; no errors."
      : `Anomalies: ${anomalies.join("; ")}`,
  ].join("\n");
  console.log(`\n${table}`);
  writeDocsTable("bench-replication", table);
  if (anomalies.length > 0) {
    console.error(`\n${anomalies.length} anomalies:\n${anomalies.join("\n")}\nbroker logs kept in ${logDir}`);
    process.exitCode = 1;
  } else rmSync(logDir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
