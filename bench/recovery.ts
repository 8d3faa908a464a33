// `npm run bench:recovery` (part of `npm run bench`): recovery time after
// kill -9 with ~1 GiB of WAL and partition logs on disk. Fills a broker with
// 1 MiB batches as fast as it takes them (so the dispatcher is behind and
// the WAL holds a backlog), kills it with SIGKILL, restarts it on the same
// data dir and measures the time to /readyz and until every accepted
// record is visible in the partition logs (none may be missing).
// RECOVERY_GIB sets how much data is on disk at the kill: one size, or a
// comma-separated sweep (default 0.25,0.5,1), each a fresh broker; the table
// reports the largest, bench/recovery-series.json and bench/recovery.svg
// (recovery time against data size) every one.

import { type Dirent, readdirSync, rmSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { startNarad, waitReady } from "../broker/test/harness/process.ts";
import { type RecoveryPoint, recoveryChart } from "./lib/charts.ts";
import { diskSyncMiBPerSec } from "./lib/disk.ts";
import { flood } from "./lib/flood.ts";
import { createTopic, Report, runNote, writeCharts, writeSeries } from "./lib/report.ts";

const MiB = 1 << 20;
const sizesGiB = (process.env.RECOVERY_GIB ?? "0.25,0.5,1")
  .split(",")
  .map(Number)
  .filter((g) => g > 0)
  .sort((a, b) => a - b);
if (sizesGiB.length === 0) throw new Error("RECOVERY_GIB: no positive size");
const report = new Report();
const batchType = { "content-type": "application/vnd.narad.batch" };

function duBytes(path: string): number {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(path, e.name);
    if (e.isDirectory()) total += duBytes(p);
    else if (e.isFile()) total += statSync(p).size;
  }
  return total;
}

async function hwmSum(url: string, topic: string): Promise<number> {
  const info = (await (await fetch(`${url}/v1/topics/${topic}`)).json()) as {
    partition_stats: Array<{ high_watermark: number }>;
  };
  return info.partition_stats.reduce((a, p) => a + p.high_watermark, 0);
}

async function main(): Promise<void> {
  const largest = sizesGiB[sizesGiB.length - 1]! * 1024 * MiB;
  process.stderr.write(
    `narad recovery bench: ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${sizesGiB.join(", ")} GiB on disk at the kill\n`,
  );
  const disk = await diskSyncMiBPerSec(3);
  report.record("disk_fdatasync_mib_per_sec", disk, "MiB/s");
  const points: RecoveryPoint[] = [];
  for (const gib of sizesGiB) {
    const targetBytes = gib * 1024 * MiB;
    // Only the largest size goes into the table (as with a single size); every size goes into the series.
    points.push(await recoverOnce(targetBytes, disk, targetBytes === largest ? report : undefined));
  }
  report.write(
    "recovery-results.json",
    "bench-recovery",
    `kill -9 with ${(largest / MiB / 1024).toFixed(1)} GiB in the data dir; ratio of records visible to records accepted must be 1.00`,
  );
  const note = runNote(`kill -9 with ${sizesGiB.join(", ")} GiB in the data dir, a fresh broker each`);
  writeSeries("recovery-series.json", note, points);
  writeCharts([recoveryChart(points, note)]);
}

/** Fills a fresh broker to targetBytes, kills it with SIGKILL, restarts it and times the recovery. */
async function recoverOnce(
  targetBytes: number,
  disk: number,
  table: Report | undefined,
): Promise<RecoveryPoint> {
  process.stderr.write(`-- ${(targetBytes / MiB).toFixed(0)} MiB on disk at the kill\n`);
  let narad = await startNarad({ keepData: true });
  const dataDir = narad.dataDir;
  const records = 64;
  const payload = Buffer.alloc(16 * 1024, "r");
  const batch = encodeBinaryBatch(
    Array.from({ length: records }, () => ({ partition: -1, key: Buffer.alloc(0), payload })),
  );
  const point: RecoveryPoint = {
    dataDirMiB: 0,
    walMiB: 0,
    readyMs: 0,
    allVisibleMs: 0,
    acceptedRecords: 0,
    visibleRecords: 0,
  };
  try {
    await createTopic(narad.url, "rec", 8);
    process.stderr.write("filling: 1 MiB batches from 16 connections until the data dir holds the target\n");
    const t0 = Date.now();
    let onDisk = 0;
    const sizer = setInterval(() => {
      onDisk = duBytes(dataDir);
    }, 250);
    const fill = await flood({
      url: `${narad.url}/v1/topics/rec/produce-batch`,
      body: batch,
      connections: 16,
      headers: batchType,
      stop: () => onDisk >= targetBytes,
    });
    clearInterval(sizer);
    const fillMs = Date.now() - t0;
    if (fill.errors > 0 || fill.other.size > 0) throw new Error(`fill: ${fill.errors} errors`);
    const accepted = (fill.accepted + fill.acceptedLate) * records;
    point.acceptedRecords = accepted;
    const walBytes = duBytes(join(dataDir, "ingress"));
    const total = duBytes(dataDir);
    point.dataDirMiB = total / MiB;
    point.walMiB = walBytes / MiB;
    table?.record(
      "fill_mib_per_sec",
      ((fill.accepted + fill.acceptedLate) * batch.length) / MiB / (fillMs / 1000),
      "MiB/s",
      disk,
    );
    table?.record("data_dir_mib_at_kill", total / MiB, "MiB");
    table?.record("wal_mib_at_kill", walBytes / MiB, "MiB");
    table?.record("accepted_records_at_kill", accepted, "records");

    await narad.kill9();
    process.stderr.write("killed with SIGKILL; restarting on the same data dir\n");
    // Drop the page cache's advantage as far as we can without root tricks:
    // the restart reads what it needs like after a crash of the process (not the machine).
    const r0 = Date.now();
    narad = await startNarad({ dataDir, port: narad.port, keepData: true });
    await waitReady(narad.url);
    const readyMs = Date.now() - r0;
    point.readyMs = readyMs;
    table?.record("recovery_to_ready_ms", readyMs, "ms");
    for (;;) {
      const visible = await hwmSum(narad.url, "rec");
      if (visible >= accepted) {
        point.allVisibleMs = Date.now() - r0;
        point.visibleRecords = visible;
        table?.record("recovery_to_all_visible_ms", point.allVisibleMs, "ms");
        table?.record("records_visible_after_recovery", visible, "records", accepted);
        break;
      }
      if (Date.now() - r0 > 600_000) throw new Error(`only ${visible} of ${accepted} records visible`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await narad.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return point;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
