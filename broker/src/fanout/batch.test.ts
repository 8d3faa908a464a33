import { describe, expect, it } from "vitest";
import { partitionForKey } from "../core/partitioner.ts";
import {
  batchFull,
  childPartition,
  defaultBatchLimits,
  dueCut,
  dueLagSeconds,
  dueSleepMs,
  firstCommittedSince,
  maxDueSleepMs,
  resumeDecision,
} from "./batch.ts";
import { cursorFileName, parseCursor } from "./cursor-file.ts";

const at = (...ms: number[]) => ms.map((commitMs) => ({ commitMs }));

describe("fan-out cursor decisions", () => {
  it("resumes only a cursor file of the same attach epoch within the log, else re-derives and says why", () => {
    const ok = (epoch: string, nextOffset: number) => ({
      state: "ok" as const,
      position: { epoch, nextOffset },
    });
    expect(resumeDecision(ok("aa", 7), "aa", 10)).toEqual({ resume: 7 });
    expect(resumeDecision(ok("aa", 10), "aa", 10)).toEqual({ resume: 10 });
    expect(resumeDecision(ok("bb", 7), "aa", 10)).toEqual({ rederive: "other-epoch" });
    expect(resumeDecision({ state: "missing" }, "aa", 10)).toEqual({ rederive: "missing" });
    expect(resumeDecision({ state: "malformed" }, "aa", 10)).toEqual({ rederive: "malformed" });
    // A position past the log's end would skip what the log gets at those offsets.
    expect(resumeDecision(ok("aa", 11), "aa", 10)).toEqual({ rederive: "beyond-high-watermark" });
  });

  it("takes the due prefix of a read and says when the first withheld record is due", () => {
    expect(dueCut(at(1, 2, 3), 1000, 0)).toEqual({ count: 3 });
    expect(dueCut(at(100, 200, 300), 1200, 1000)).toEqual({ count: 2, blockedUntilMs: 1300 });
    expect(dueCut(at(100, 200), 1000, 1000)).toEqual({ count: 0, blockedUntilMs: 1100 });
    expect(dueCut([], 5, 1000)).toEqual({ count: 0 });
  });

  it("sleeps until due, at most 30 s and at least 1 ms", () => {
    expect(dueSleepMs(1500, 1000)).toBe(500);
    expect(dueSleepMs(10_000_000, 0)).toBe(maxDueSleepMs);
    expect(dueSleepMs(900, 1000)).toBe(1);
  });

  it("ships a batch at 4,096 records or 4 MiB", () => {
    expect(batchFull(4095, 100, defaultBatchLimits)).toBe(false);
    expect(batchFull(4096, 100, defaultBatchLimits)).toBe(true);
    expect(batchFull(1, 4 << 20, defaultBatchLimits)).toBe(true);
  });

  it("puts a record where a produce with its key would go", () => {
    const key = Buffer.from("order-17");
    expect(childPartition(key, 7)).toBe(partitionForKey(key, 7));
  });

  it("measures due lag past commit + delay", () => {
    expect(dueLagSeconds(undefined, 0, 10_000)).toBe(0);
    expect(dueLagSeconds(1_000, 2_000, 10_000)).toBe(7);
    expect(dueLagSeconds(9_000, 2_000, 10_000)).toBe(0);
  });

  it("finds the first record committed since the attach by bisection, skipping removed offsets", async () => {
    const times = [10, 20, 20, 30, 40, 50];
    const commitAt = async (o: number) => times[o];
    expect(await firstCommittedSince(0, 6, 20, commitAt)).toBe(1);
    expect(await firstCommittedSince(0, 6, 41, commitAt)).toBe(5);
    expect(await firstCommittedSince(0, 6, 99, commitAt)).toBe(6);
    expect(await firstCommittedSince(0, 6, 0, commitAt)).toBe(0);
    expect(await firstCommittedSince(0, 6, 30, async (o) => (o < 3 ? undefined : times[o]))).toBe(3);
  });

  it("reads a malformed cursor file as none, and keeps long child names under NAME_MAX", () => {
    expect(parseCursor('{"epoch":"ab","next_offset":5}')).toEqual({ epoch: "ab", nextOffset: 5 });
    for (const bad of ["", "{", '{"epoch":"","next_offset":1}', '{"epoch":"a","next_offset":-1}', "[]"])
      expect(parseCursor(bad)).toBeUndefined();
    expect(cursorFileName("orders")).toBe("fanout-orders.offset");
    expect(cursorFileName("x".repeat(255)).length).toBeLessThan(255);
  });
});

describe("fan-out cursor file", () => {
  it("a stopped cursor removes its file only while the file is still its epoch's", async () => {
    const { mkdtempSync, rmSync, existsSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { removeCursor, writeCursor, readCursorFile } = await import("./cursor-file.ts");
    const dir = mkdtempSync(join(tmpdir(), "fanout-cursor-"));
    try {
      // A namesake child (or a re-attach) already saved its own position under the same name.
      await writeCursor(dir, "c", { epoch: "new", nextOffset: 5 });
      await removeCursor(dir, "c", "old");
      expect(await readCursorFile(dir, "c")).toEqual({
        state: "ok",
        position: { epoch: "new", nextOffset: 5 },
      });
      await removeCursor(dir, "c", "new");
      expect(existsSync(join(dir, cursorFileName("c")))).toBe(false);
      expect(await readCursorFile(dir, "c")).toEqual({ state: "missing" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
