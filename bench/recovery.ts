// `npm run bench:recovery` (part of `npm run bench`): recovery time after
// kill -9 with ~1 GiB of WAL and partition logs on disk. Fills a broker with
// 1 MiB batches as fast as it takes them (so the dispatcher is behind and
// the WAL holds a backlog), kills it with SIGKILL, restarts it on the same
// data dir and measures the time to /readyz and until every accepted
// record is visible in the partition logs (none may be missing).
// RECOVERY_GIB (default 1) sets how much data is on disk at the kill.

import { type Dirent, readdirSync, rmSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { startNarad, waitReady } from "../broker/test/harness/process.ts";
import { diskSyncMiBPerSec } from "./lib/disk.ts";
import { flood } from "./lib/flood.ts";
import { createTopic, Report } from "./lib/report.ts";

const MiB = 1 << 20;
const targetBytes = Number(process.env.RECOVERY_GIB ?? 1) * 1024 * MiB;
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
  process.stderr.write(
    `narad recovery bench: ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${(targetBytes / MiB).toFixed(0)} MiB on disk at the kill\n`,
  );
  const disk = await diskSyncMiBPerSec(3);
  report.record("disk_fdatasync_mib_per_sec", disk, "MiB/s");

  let narad = await startNarad({ keepData: true });
  const dataDir = narad.dataDir;
  const records = 64;
  const payload = Buffer.alloc(16 * 1024, "r");
  const batch = encodeBinaryBatch(
    Array.from({ length: records }, () => ({ partition: -1, key: Buffer.alloc(0), payload })),
  );
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
    const walBytes = duBytes(join(dataDir, "ingress"));
    const total = duBytes(dataDir);
    report.record(
      "fill_mib_per_sec",
      ((fill.accepted + fill.acceptedLate) * batch.length) / MiB / (fillMs / 1000),
      "MiB/s",
      disk,
    );
    report.record("data_dir_mib_at_kill", total / MiB, "MiB");
    report.record("wal_mib_at_kill", walBytes / MiB, "MiB");
    report.record("accepted_records_at_kill", accepted, "records");

    await narad.kill9();
    process.stderr.write("killed with SIGKILL; restarting on the same data dir\n");
    // Drop the page cache's advantage as far as we can without root tricks:
    // the restart reads what it needs like after a crash of the process (not the machine).
    const r0 = Date.now();
    narad = await startNarad({ dataDir, port: narad.port, keepData: true });
    await waitReady(narad.url);
    const readyMs = Date.now() - r0;
    report.record("recovery_to_ready_ms", readyMs, "ms");
    for (;;) {
      const visible = await hwmSum(narad.url, "rec");
      if (visible >= accepted) {
        report.record("recovery_to_all_visible_ms", Date.now() - r0, "ms");
        report.record("records_visible_after_recovery", visible, "records", accepted);
        break;
      }
      if (Date.now() - r0 > 600_000) throw new Error(`only ${visible} of ${accepted} records visible`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await narad.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  report.write(
    "recovery-results.json",
    "bench-recovery",
    `kill -9 with ${(targetBytes / MiB / 1024).toFixed(1)} GiB in the data dir; ratio of records visible to records accepted must be 1.00`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
