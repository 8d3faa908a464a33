// The staged copy's verification at finalize: a copy with a zeroed frame in
// the middle, a missing tail or a stale hwm file must fail, whatever the
// number the destination would write; an exact copy passes with the HWM its
// frames give.

import { copyFile, mkdir, mkdtemp, open, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { type OpenedPartitionLog, openPartitionLog } from "../log/partition-log.ts";
import { parseSegmentFileName, segmentFileName } from "../log/segment.ts";
import { chunkChecksum, segmentChecksums } from "./checksum.ts";
import { finalizeStaged, parseMovedFloor, stagedExtents, writeChunk } from "./staging.ts";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-staging-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const logOptions = { segmentBytes: 1 << 20, indexIntervalBytes: 128, maxFrameBytes: 1 << 20 };

function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.alloc(40, from + i),
    incarnation: "1111111111111111",
    seq: from + i,
  }));
}

/** Segment byte length after each of the three commits (the frame boundaries). */
let frameEnds: number[] = [];

/** A source log with offsets 0..29 in three commits (frames) of 10. */
async function sourceLog(): Promise<OpenedPartitionLog> {
  frameEnds = [];
  const log = await openPartitionLog({
    dir: join(root, "src", "p00000"),
    ...logOptions,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => 1_000,
  });
  for (let i = 0; i < 3; i++) {
    await log.commitDurable(recs(i * 10, 10));
    frameEnds.push(log.segmentExtents()[0]!.bytes);
  }
  return log;
}

/** Copies the source's segment files byte for byte into a staged dir. */
async function stage(src: OpenedPartitionLog): Promise<string> {
  const dir = join(root, "staged", "p00000");
  await mkdir(dir, { recursive: true });
  for (const name of await readdir(join(root, "src", "p00000")))
    if (parseSegmentFileName(name) !== null)
      await copyFile(join(root, "src", "p00000", name), join(dir, name));
  expect(src.segmentExtents()).toHaveLength(1);
  return dir;
}

async function sourceChecksums(src: OpenedPartitionLog, dir: string) {
  return segmentChecksums((b, p, n) => src.readSegmentBytes(b, p, n), await stagedExtents(dir));
}

describe("finalizeStaged", () => {
  it("accepts an exact copy; its HWM is the end of its frames", async () => {
    const src = await sourceLog();
    try {
      const dir = await stage(src);
      const hwm = await finalizeStaged(
        dir,
        {
          highWatermark: 30,
          frontiers: [],
          sourceChecksums: await sourceChecksums(src, dir),
          dedupFloor: [],
        },
        logOptions,
      );
      expect(hwm).toBe(30);
      const copy = await openPartitionLog({
        dir,
        ...logOptions,
        hwmPersistIntervalMs: 60_000,
        nowMs: () => 1,
      });
      expect((await copy.read(0, 100, 1 << 20)).map((r) => r.offset)).toEqual(
        Array.from({ length: 30 }, (_, i) => i),
      );
      await copy.close();
    } finally {
      await src.close();
    }
  });

  it("refuses a copy whose frame holding offsets 10-19 is zeroed (it recovers as a gap with the same end)", async () => {
    const src = await sourceLog();
    try {
      const dir = await stage(src);
      const sums = await sourceChecksums(src, dir);
      // Zero the second frame: recovery skips it as a gap, the end is still 30.
      const seg = src.segmentExtents()[0]!;
      const frame = frameEnds[1]! - frameEnds[0]!;
      const h = await open(join(dir, segmentFileName(seg.base)), "r+");
      await h.write(Buffer.alloc(frame), 0, frame, frameEnds[0]!);
      await h.close();
      await expect(
        finalizeStaged(
          dir,
          { highWatermark: 30, frontiers: [], sourceChecksums: sums, dedupFloor: [] },
          logOptions,
        ),
      ).rejects.toThrow(/failed verification/);
    } finally {
      await src.close();
    }
  });

  it("refuses a copy missing its last frame, even with a stale hwm file naming the source's HWM", async () => {
    const src = await sourceLog();
    try {
      const dir = await stage(src);
      const seg = src.segmentExtents()[0]!;
      const h = await open(join(dir, segmentFileName(seg.base)), "r+");
      await h.truncate(frameEnds[1]!);
      await h.close();
      // What the old finalize wrote before opening: 30, big-endian.
      const b = Buffer.alloc(8);
      b.writeUInt32BE(30, 4);
      await writeFile(join(dir, "hwm"), b);
      // The source vouches for the full segment; the copy has less.
      const sums = await segmentChecksums((x, p, n) => src.readSegmentBytes(x, p, n), src.segmentExtents());
      await expect(
        finalizeStaged(
          dir,
          { highWatermark: 30, frontiers: [], sourceChecksums: sums, dedupFloor: [] },
          logOptions,
        ),
      ).rejects.toThrow(/failed verification/);
    } finally {
      await src.close();
    }
  });

  it("writeChunk leaves the bytes on disk and the chunk checksum is the data's", async () => {
    const dir = join(root, "w", "p00000");
    const data = Buffer.from("hello chunk");
    await writeChunk(dir, 0, 0, data);
    expect((await stagedExtents(dir))[0]).toEqual({ base: 0, bytes: data.length });
    expect(chunkChecksum(data)).toBe(chunkChecksum(Buffer.from("hello chunk")));
    expect(chunkChecksum(data)).not.toBe(chunkChecksum(Buffer.from("hello chunK")));
  });
});

describe("parseMovedFloor", () => {
  it("keeps the highest seq per incarnation and refuses an entry the log could not reopen with", () => {
    const ok = parseMovedFloor([
      { incarnation: "00000000000000aa", seq: 5 },
      { incarnation: "00000000000000aa", seq: 9 },
      { incarnation: "00000000000000bb", seq: 0 },
    ]);
    expect(ok).toEqual({
      ok: true,
      seqs: new Map([
        ["00000000000000aa", 9],
        ["00000000000000bb", 0],
      ]),
    });
    expect(parseMovedFloor([{ incarnation: "../etc", seq: 1 }]).ok).toBe(false);
    expect(parseMovedFloor([{ incarnation: "00000000000000aa", seq: -1 }]).ok).toBe(false);
    expect(parseMovedFloor([{ incarnation: "00000000000000aa", seq: 2 ** 60 }]).ok).toBe(false);
  });
});
