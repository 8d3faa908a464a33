// The follower's log on real files: append (CRC refused on arrival, offsets
// must run on), torn-tail recovery, truncation across segments, and that the
// directory opens as an ordinary partition log with the same records.

import { mkdtemp, open, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { encodeFrame } from "../core/log-codec.ts";
import type { CommitRecord } from "../core/records.ts";
import { openPartitionLog } from "../log/partition-log.ts";
import { ReplicaLog } from "./replica-log.ts";
import { ensureVolumeId, readVolumeId } from "./volume-id-file.ts";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-replica-log-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.alloc(30, from + i),
    incarnation: "1111111111111111",
    seq: from + i + 1,
  }));
}
const frame = (base: number, n: number): Buffer => encodeFrame(recs(base, n), base, 1_000);
const opts = () => ({ dir: join(root, "p00000"), segmentBytes: 300, maxFrameBytes: 1 << 20 });

describe("replica log", () => {
  it("appends contiguous frames across segments and refuses a gap or a bad CRC before writing", async () => {
    const log = await ReplicaLog.open(opts());
    for (let i = 0; i < 10; i++) await log.append(frame(i * 3, 3));
    expect(log.endOffset).toBe(30);
    expect(log.segmentFiles().length).toBeGreaterThan(1);
    await expect(log.append(frame(31, 1))).rejects.toThrow(/where 30 was expected/);
    const bad = frame(30, 1);
    bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
    await expect(log.append(bad)).rejects.toThrow(/CRC mismatch/);
    expect(log.endOffset).toBe(30);

    const reopened = await ReplicaLog.open(opts());
    expect(reopened.endOffset).toBe(30);
    expect(reopened.recovery.cutBytes).toBe(0);
    // The directory is a partition log: the broker's own recovery reads every record back.
    const pl = await openPartitionLog({
      ...opts(),
      indexIntervalBytes: 128,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 1,
    });
    try {
      expect(pl.stats().highWatermark).toBe(30);
      const read = await pl.read(0, 100, 1 << 20);
      expect(read.map((r) => r.offset)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      expect(read[29]!.payload.equals(Buffer.alloc(30, 29))).toBe(true);
    } finally {
      await pl.close();
    }
  });

  it("cuts a torn tail at open", async () => {
    const log = await ReplicaLog.open(opts());
    await log.append(frame(0, 2));
    const last = log.segmentFiles().at(-1)!;
    const half = frame(2, 2).subarray(0, 20);
    const fh = await open(last.path, "r+");
    await fh.write(half, 0, half.length, last.bytes);
    await fh.close();
    const reopened = await ReplicaLog.open(opts());
    expect(reopened.endOffset).toBe(2);
    expect(reopened.recovery.cutBytes).toBe(20);
    await reopened.append(frame(2, 2));
    expect(reopened.endOffset).toBe(4);
  });

  it("truncates to a frame boundary in an earlier segment, drops later segments, refuses a mid-frame cut", async () => {
    const log = await ReplicaLog.open(opts());
    for (let i = 0; i < 10; i++) await log.append(frame(i * 3, 3));
    await expect(log.truncateTo(10)).rejects.toThrow(/not a frame boundary/);
    expect(log.endOffset).toBe(30);
    await log.truncateTo(9);
    expect(log.endOffset).toBe(9);
    const names = (await readdir(opts().dir)).filter((n) => n.endsWith(".log"));
    expect(names.length).toBe(log.segmentFiles().length);
    const reopened = await ReplicaLog.open(opts());
    expect(reopened.endOffset).toBe(9);
    await reopened.append(frame(9, 1));
    await reopened.truncateTo(0);
    expect(reopened.endOffset).toBe(0);
  });
});

describe("volume-id file", () => {
  it("writes a marker on a fresh volume, finds it again, reports a foreign one without overwriting it", async () => {
    const self = { clusterUid: "c1", memberId: "b" };
    const first = await ensureVolumeId(root, self);
    expect(first.kind).toBe("created");
    const again = await ensureVolumeId(root, self);
    expect(again.kind).toBe("own");
    expect(again.kind !== "foreign" && first.kind !== "foreign" && again.identity.uuid).toBe(
      first.kind !== "foreign" && first.identity.uuid,
    );
    const foreign = await ensureVolumeId(root, { clusterUid: "c1", memberId: "a" });
    expect(foreign.kind).toBe("foreign");
    expect((await readVolumeId(root, self)).kind).toBe("own");
    // Moved to another cluster (another uid): foreign, the marker untouched.
    const moved = await ensureVolumeId(root, { clusterUid: "c2", memberId: "b" });
    expect(moved.kind === "foreign" && moved.reason).toContain('cluster "c1"');
    expect((await readVolumeId(root, self)).kind).toBe("own");
  });

  it("a marker written before the cluster uid was known is rewritten with it, same uuid", async () => {
    const first = await ensureVolumeId(root, { clusterUid: "", memberId: "b" });
    const adopted = await ensureVolumeId(root, { clusterUid: "c9", memberId: "b" });
    expect(adopted.kind).toBe("own");
    expect(adopted.kind !== "foreign" && adopted.identity).toEqual({
      uuid: first.kind !== "foreign" ? first.identity.uuid : "",
      clusterUid: "c9",
      memberId: "b",
    });
    expect((await readVolumeId(root, { clusterUid: "c9", memberId: "b" })).kind).toBe("own");
    expect((await readVolumeId(root, { clusterUid: "c8", memberId: "b" })).kind).toBe("foreign");
  });

  it("follows the leader's retention: drops sealed segments below its oldest offset after raising the dedup floor", async () => {
    const log = await ReplicaLog.open(opts());
    for (let i = 0; i < 10; i++) await log.append(frame(i * 3, 3));
    const before = log.segmentFiles();
    const cut = before[2]!.base;
    expect(await log.deleteBelow(cut)).toBe(2);
    expect(log.startOffset).toBe(cut);
    expect(log.endOffset).toBe(30);
    // Opened as a leader's log, it still refuses the deleted records' seqs.
    const plog = await openPartitionLog({
      dir: opts().dir,
      segmentBytes: 300,
      indexIntervalBytes: 64,
      maxFrameBytes: 1 << 20,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 2_000,
    });
    try {
      expect(plog.committedSeq("1111111111111111")).toBe(30);
      const again = await plog.commitDurable(recs(0, 2));
      expect(again).toMatchObject({ appended: 0, duplicates: 2 });
    } finally {
      await plog.close();
    }
    expect(await log.deleteBelow(0)).toBe(0);
  });

  it("restarts empty at the leader's oldest offset, keeping the dedup floor of what it dropped", async () => {
    const log = await ReplicaLog.open(opts());
    for (let i = 0; i < 3; i++) await log.append(frame(i * 3, 3));
    await log.resetTo(500);
    expect(log.startOffset).toBe(500);
    expect(log.endOffset).toBe(500);
    const again = await ReplicaLog.open(opts());
    expect(again.endOffset).toBe(500);
    const plog = await openPartitionLog({
      dir: opts().dir,
      segmentBytes: 300,
      indexIntervalBytes: 64,
      maxFrameBytes: 1 << 20,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 2_000,
    });
    try {
      expect(plog.committedSeq("1111111111111111")).toBe(9);
      expect(plog.stats().nextOffset).toBe(500);
    } finally {
      await plog.close();
    }
  });
});
