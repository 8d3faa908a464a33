// `npm run bench:segment-reads`: read throughput of a partition log with
// many sealed segments, through the log store's bounded read-handle cache
// (broker/src/log/segment-handles.ts). One run measures, on the same data:
//   - a cache large enough for every segment (each keeps an fd once read:
//     the steady state before the cache existed), the baseline;
//   - the default-sized cache;
//   - a cache of 4, one sequential reader (one open per segment crossed);
//   - a cache of 4, 8 concurrent readers at random offsets (thrash).
// Passes are interleaved and the median of SEGREAD_ROUNDS (default 5) kept,
// as records/s (wall clock) and as process CPU µs per record (the steadier
// number on a shared machine).
// BEFORE_LOG_DIR=<dir holding an older broker/src/log copy> adds that
// code's store as a further line (a true before/after in the same run).
// SEGREAD_SEGMENTS (default 1,000) segments of ~32 KiB.

import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { CommitRecord } from "../broker/src/core/records.ts";
import { type LogStore, type LogStoreOptions, openLogStore } from "../broker/src/log/log-store.ts";
import { Report } from "./lib/report.ts";

const segments = Number(process.env.SEGREAD_SEGMENTS ?? 1_000);
const rounds = Number(process.env.SEGREAD_ROUNDS ?? 5);
const recordBytes = 1_024;
const perSegment = 30;
const total = segments * perSegment;

type Opener = (o: LogStoreOptions) => Promise<LogStore>;

function records(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.alloc(recordBytes, (from + i) & 0xff),
    incarnation: "00000000000000b1",
    seq: from + i + 1,
  }));
}

function options(dataDir: string, maxSegmentFds: number): LogStoreOptions {
  return {
    dataDir,
    segmentBytes: perSegment * (recordBytes + 64),
    indexIntervalBytes: 4_096,
    maxFrameBytes: 1 << 20,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => 1_000,
    maxSegmentFds,
  };
}

/**
 * Records read per second (wall clock) by `readers` concurrent readers, and
 * the process CPU time per record (steadier than wall time on a busy machine).
 */
async function pass(
  open: Opener,
  dataDir: string,
  cache: number,
  readers: number,
): Promise<{ perSec: number; cpuUsPerRecord: number }> {
  const store = await open(options(dataDir, cache));
  try {
    const log = await store.get("t", 0);
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    let read = 0;
    // Long enough (the whole log per reader) that timer noise and the first opens do not dominate.
    const perReader = total;
    await Promise.all(
      Array.from({ length: readers }, async (_, k) => {
        // Sequential from offset 0 with one reader; else random starting points, short pages.
        let offset = readers === 1 ? 0 : Math.floor(Math.random() * total);
        let mine = 0;
        while (mine < perReader) {
          if (readers > 1 && mine % 200 === 0) offset = Math.floor(Math.random() * total);
          const got = await log.read(offset, readers === 1 ? 500 : 20, 1 << 20);
          if (got.length === 0) {
            offset = 0;
            continue;
          }
          for (const r of got)
            if (r.payload[0] !== (r.offset & 0xff)) throw new Error(`wrong record at ${r.offset}`);
          mine += got.length;
          offset = got[got.length - 1]!.offset + 1;
        }
        read += mine;
        return k;
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    return {
      perSec: read / ((performance.now() - started) / 1_000),
      cpuUsPerRecord: (cpu.user + cpu.system) / read,
    };
  } finally {
    await store.closeAll();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "narad-segreads-"));
  const report = new Report();
  try {
    process.stderr.write(`filling ${segments} segments (${total} records of ${recordBytes} B)\n`);
    const fill = await openLogStore(options(dataDir, 1_024));
    const log = await fill.get("t", 0);
    for (let s = 0; s < segments; s++) await log.commitDurable(records(s * perSegment, perSegment));
    process.stderr.write(`  ${log.stats().segments} segments\n`);
    await fill.closeAll();

    const openers: Array<{ name: string; open: Opener }> = [{ name: "after", open: openLogStore }];
    const beforeDir = process.env.BEFORE_LOG_DIR;
    if (beforeDir !== undefined) {
      const mod = (await import(join(beforeDir, "log-store.ts"))) as { openLogStore: Opener };
      openers.push({ name: "before", open: mod.openLogStore });
    }
    const configs = [
      { name: "cache >= segments, 1 sequential reader", cache: segments + 8, readers: 1 },
      { name: "cache 4, 1 sequential reader", cache: 4, readers: 1 },
      { name: "cache >= segments, 8 random readers", cache: segments + 8, readers: 8 },
      { name: "cache 1024 (default), 8 random readers", cache: 1_024, readers: 8 },
      { name: "cache 4, 8 random readers", cache: 4, readers: 8 },
    ];
    const samples = new Map<string, number[]>();
    const cpuSamples = new Map<string, number[]>();
    for (let r = 0; r < rounds; r++) {
      for (const o of openers) {
        for (const c of configs) {
          // The older code has no cache: one line per reader count is enough.
          if (o.name === "before" && c.cache !== segments + 8) continue;
          const key = `${o.name}: ${c.name}`;
          const v = await pass(o.open, dataDir, c.cache, c.readers);
          samples.set(key, [...(samples.get(key) ?? []), v.perSec]);
          cpuSamples.set(key, [...(cpuSamples.get(key) ?? []), v.cpuUsPerRecord]);
        }
      }
    }
    const baseKeys = [`after: ${configs[0]!.name}`, `after: ${configs[2]!.name}`];
    const baseOf = (key: string) => (key.includes("1 sequential") ? baseKeys[0]! : baseKeys[2 - 1]!);
    for (const [key, vs] of samples) {
      const isBase = baseKeys.includes(key);
      report.record(key, median(vs), "records/s", isBase ? null : median(samples.get(baseOf(key))!));
    }
    for (const [key, vs] of cpuSamples) {
      const isBase = baseKeys.includes(key);
      report.record(
        `${key} (CPU)`,
        median(vs),
        "µs CPU/record",
        isBase ? null : median(cpuSamples.get(baseOf(key))!),
      );
    }
    report.write(
      "segment-reads-results.json",
      "segment-reads",
      `${segments} segments of ${perSegment} × ${recordBytes} B records, median of ${rounds}; ratio against the cache that holds every segment (new code), same reader count; load average ${loadavg()[0]!.toFixed(1)} at the end`,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
