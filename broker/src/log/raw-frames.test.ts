// readRawFrames and waitForHwmAbove (replication's leader side): whole
// frames as stored, from frame boundaries only, across segments, never at
// or past the HWM, never across a corrupt gap; the HWM wait wakes on a
// commit and times out otherwise.

import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { isLogError } from "./log-errors.ts";
import { openPartitionLog } from "./partition-log.ts";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-raw-frames-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const opts = () => ({
  dir: join(root, "p00000"),
  segmentBytes: 600,
  indexIntervalBytes: 128,
  maxFrameBytes: 1 << 20,
  hwmPersistIntervalMs: 60_000,
  nowMs: () => 1_000,
});

function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.alloc(40, from + i),
    incarnation: "1111111111111111",
    seq: from + i + 1,
  }));
}

describe("partition log: raw frames for replica fetches", () => {
  it("returns the stored bytes from frame boundaries across segments, refuses mid-frame and past-HWM offsets", async () => {
    const log = await openPartitionLog(opts());
    try {
      for (let i = 0; i < 12; i++) await log.commitDurable(recs(i * 2, 2));
      expect(log.stats().segments).toBeGreaterThan(1);
      let at = 0;
      const parts: Buffer[] = [];
      while (at < 24) {
        const r = await log.readRawFrames(at, 150);
        expect(r.nextOffset).toBeGreaterThan(at);
        parts.push(r.frames);
        at = r.nextOffset;
      }
      const names = (await readdir(opts().dir)).filter((n) => n.endsWith(".log")).sort();
      const onDisk = Buffer.concat(await Promise.all(names.map((n) => readFile(join(opts().dir, n)))));
      expect(Buffer.concat(parts).equals(onDisk)).toBe(true);
      expect((await log.readRawFrames(24, 1000)).frames.length).toBe(0);
      await expect(log.readRawFrames(1, 1000)).rejects.toSatisfy((e) => isLogError(e, "OFFSET_OUT_OF_RANGE"));
      await expect(log.readRawFrames(25, 1000)).rejects.toSatisfy((e) =>
        isLogError(e, "OFFSET_OUT_OF_RANGE"),
      );
    } finally {
      await log.close();
    }
  });

  it("ends a run at a corrupt gap, resumes after it, and refuses an offset inside it", async () => {
    const o = { ...opts(), segmentBytes: 1 << 20 };
    const seg = join(o.dir, "00000000000000000000.log");
    let log = await openPartitionLog(o);
    const ends: number[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        await log.commitDurable(recs(i * 3, 3));
        ends.push((await stat(seg)).size);
      }
    } finally {
      await log.close();
    }
    // Frame 4 (offsets 12..14) gets a flipped payload byte: recovery keeps it as a gap.
    const bytes = await readFile(seg);
    bytes[ends[3]! + 40]! ^= 0xff;
    await writeFile(seg, bytes);
    log = await openPartitionLog(o);
    try {
      expect(log.recovery.gaps).toBe(1);
      const before = await log.readRawFrames(0, 1 << 20);
      expect(before.nextOffset).toBe(12);
      expect(before.frames.equals(bytes.subarray(0, ends[3]!))).toBe(true);
      const after = await log.readRawFrames(15, 1 << 20);
      expect(after.nextOffset).toBe(24);
      expect(after.frames.equals(bytes.subarray(ends[4]!, ends[7]!))).toBe(true);
      await expect(log.readRawFrames(12, 1 << 20)).rejects.toSatisfy((e) =>
        isLogError(e, "OFFSET_OUT_OF_RANGE"),
      );
    } finally {
      await log.close();
    }
  });

  it("waitForHwmAbove wakes on a commit and times out without one", async () => {
    const log = await openPartitionLog(opts());
    try {
      let t0 = performance.now();
      await log.waitForHwmAbove(0, 150);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
      t0 = performance.now();
      const waiting = log.waitForHwmAbove(0, 10_000);
      await log.commitDurable(recs(0, 1));
      await waiting;
      expect(performance.now() - t0).toBeLessThan(5_000);
      const abort = new AbortController();
      const aborted = log.waitForHwmAbove(1, 10_000, abort.signal);
      abort.abort();
      await aborted;
    } finally {
      await log.close();
    }
  });
});
