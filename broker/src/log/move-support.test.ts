// What partition moves need from the log layer: a partition log's freeze,
// segment extents and raw segment reads (the byte-exact copy), and the log
// store's hold / install / remove of one partition.

import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { isLogError } from "./log-errors.ts";
import { type LogStore, openLogStore } from "./log-store.ts";
import { openPartitionLog } from "./partition-log.ts";
import { segmentFileName } from "./segment.ts";

let root: string;
let store: LogStore | null = null;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-move-log-"));
});

afterEach(async () => {
  await store?.closeAll();
  store = null;
  await rm(root, { recursive: true, force: true });
});

const logOptions = {
  segmentBytes: 600,
  indexIntervalBytes: 128,
  maxFrameBytes: 1 << 20,
  hwmPersistIntervalMs: 60_000,
};

function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.alloc(40, from + i),
    incarnation: "1111111111111111",
    seq: from + i,
  }));
}

async function openStore(): Promise<LogStore> {
  store = await openLogStore({ dataDir: root, ...logOptions, nowMs: () => 1_000 });
  return store;
}

describe("partition log: freeze and raw segment reads", () => {
  it("refuses commits while frozen (PARTITION_FROZEN), waits for the commit in progress, resumes after unfreeze", async () => {
    const log = await openPartitionLog({ dir: join(root, "p00000"), ...logOptions, nowMs: () => 1_000 });
    try {
      const inFlight = log.commitDurable(recs(1, 3)).then(
        (r) => r.appended,
        (e: unknown) => e,
      );
      await new Promise((r) => setImmediate(r)); // the commit has started its write
      await log.freeze();
      // A commit that had started finishes before freeze() resolves (one queued
      // but not started is refused instead): the HWM is final either way.
      const atFreeze = log.stats().highWatermark;
      const outcome = await inFlight;
      expect(atFreeze).toBe(outcome === 3 ? 3 : 0);
      if (outcome !== 3) expect(isLogError(outcome, "PARTITION_FROZEN")).toBe(true);
      expect(log.frozen).toBe(true);
      const refused = await log.commitDurable(recs(4, 1)).catch((e: unknown) => e);
      expect(isLogError(refused, "PARTITION_FROZEN")).toBe(true);
      expect(log.stats().highWatermark).toBe(atFreeze);
      log.unfreeze();
      expect((await log.commitDurable(recs(4, 1))).appended).toBe(1);
    } finally {
      await log.close();
    }
  });

  it("segment extents cover exactly the verified bytes, and raw reads return the file's bytes below them", async () => {
    const dir = join(root, "p00001");
    const log = await openPartitionLog({ dir, ...logOptions, nowMs: () => 1_000 });
    try {
      for (let i = 0; i < 10; i++) await log.commitDurable(recs(1 + i * 3, 3));
      const extents = log.segmentExtents();
      expect(extents.length).toBeGreaterThan(1); // 600-byte segments rolled
      for (const e of extents) {
        const file = await readFile(join(dir, segmentFileName(e.base)));
        expect(file.length).toBe(e.bytes);
        const all = await log.readSegmentBytes(e.base, 0, e.bytes + 1000);
        expect(all).toEqual(file); // capped at the verified end
        const mid = await log.readSegmentBytes(e.base, 10, 7);
        expect(mid).toEqual(file.subarray(10, 17));
      }
      expect(await log.readSegmentBytes(123_456, 0, 10)).toBeNull();
    } finally {
      await log.close();
    }
  });
});

describe("log store: hold, install, remove one partition", () => {
  it("a held partition refuses get() with PARTITION_MOVING until released", async () => {
    const s = await openStore();
    const release = s.hold("t", 2);
    const err = await s.get("t", 2).catch((e: unknown) => e);
    expect(isLogError(err, "PARTITION_MOVING")).toBe(true);
    expect(await s.exists("t", 2)).toBe(false); // no empty log was created
    release();
    release(); // idempotent
    await s.get("t", 2);
    expect(await s.exists("t", 2)).toBe(true);
  });

  it("install replaces the open partition with a staged copy; remove deletes it", async () => {
    const s = await openStore();
    const old = await s.get("t", 0);
    await old.commitDurable(recs(1, 2));
    // A staged copy elsewhere on the same file system, with other records.
    const staged = join(root, "moves", "t", "p00000");
    await mkdir(staged, { recursive: true });
    const copy = await openPartitionLog({ dir: staged, ...logOptions, nowMs: () => 1_000 });
    await copy.commitDurable(recs(100, 5));
    await copy.close();

    await s.install("t", 0, staged);
    const now = await s.get("t", 0);
    expect(now).not.toBe(old);
    const got = await now.read(0, 100, 1 << 20);
    expect(got.map((r) => r.seq)).toEqual([100, 101, 102, 103, 104]);
    // The dedup state came with the copy: a re-send is a duplicate.
    expect((await now.commitDurable(recs(100, 5))).duplicates).toBe(5);

    await s.removePartition("t", 0);
    expect(await s.exists("t", 0)).toBe(false);
  });
});
