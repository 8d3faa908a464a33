import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord, StoredRecord } from "../core/records.ts";
import { isLogError } from "./log-errors.ts";
import { type LogFile, type LogIo, nodeLogIo } from "./log-io.ts";
import { type OpenedPartitionLog, type OpenPartitionLogOptions, openPartitionLog } from "./partition-log.ts";
import { recoveryCases } from "./recovery.ts";
import { segmentFileName } from "./segment.ts";
import { commitOutcome } from "./types.ts";

const incA = "00000000000000aa";
const incB = "00000000000000bb";

let root: string;
let dir: string;
let now: number;
const opened: OpenedPartitionLog[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-plog-"));
  dir = join(root, "p00003");
  now = 1_000_000;
});

afterEach(async () => {
  for (const log of opened.splice(0)) await log.close().catch(() => {});
  await rm(root, { recursive: true, force: true });
});

function options(over: Partial<OpenPartitionLogOptions> = {}): OpenPartitionLogOptions {
  return {
    dir,
    segmentBytes: 1 << 20,
    indexIntervalBytes: 256,
    maxFrameBytes: 1 << 20,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => now,
    ...over,
  };
}

async function open(over: Partial<OpenPartitionLogOptions> = {}): Promise<OpenedPartitionLog> {
  const log = await openPartitionLog(options(over));
  opened.push(log);
  return log;
}

async function reopen(log: OpenedPartitionLog, over: Partial<OpenPartitionLogOptions> = {}) {
  await log.close();
  return open(over);
}

function recs(from: number, n: number, inc = incA, payloadBytes = 20): CommitRecord[] {
  const out: CommitRecord[] = [];
  for (let i = 0; i < n; i++) {
    const seq = from + i;
    out.push({
      key: Buffer.from(`k${seq}`),
      createdMs: seq,
      payload: Buffer.alloc(payloadBytes, seq & 0xff),
      incarnation: inc,
      seq,
    });
  }
  return out;
}

async function readAll(log: OpenedPartitionLog, from = 0): Promise<StoredRecord[]> {
  return log.read(from, 1_000_000, Number.MAX_SAFE_INTEGER);
}

function segPath(base = 0): string {
  return join(dir, segmentFileName(base));
}

/** Wraps the real io; tests arm one-shot faults. */
class FaultyIo implements LogIo {
  failDatasync = 0;
  failTruncate = 0;
  corruptRead = 0;
  readonly #inner = nodeLogIo;
  async open(path: string, create: boolean): Promise<LogFile> {
    const f = await this.#inner.open(path, create);
    return {
      read: async (buf, off, len, pos) => {
        const n = await f.read(buf, off, len, pos);
        if (this.corruptRead > 0 && n > 30) {
          this.corruptRead--;
          buf[off + 30]! ^= 0x55;
        }
        return n;
      },
      writev: (bufs, pos) => f.writev(bufs, pos),
      datasync: async () => {
        if (this.failDatasync > 0) {
          this.failDatasync--;
          throw Object.assign(new Error("EIO: injected fsync failure"), { code: "EIO" });
        }
        await f.datasync();
      },
      truncate: async (len) => {
        if (this.failTruncate > 0) {
          this.failTruncate--;
          throw Object.assign(new Error("EIO: injected truncate failure"), { code: "EIO" });
        }
        await f.truncate(len);
      },
      size: () => f.size(),
      close: () => f.close(),
    };
  }
  list = nodeLogIo.list;
  mkdirp = nodeLogIo.mkdirp;
  unlink = nodeLogIo.unlink;
  rename = nodeLogIo.rename;
  removeTree = nodeLogIo.removeTree;
  fsyncDir = nodeLogIo.fsyncDir;
  readSmall = nodeLogIo.readSmall;
  exists = nodeLogIo.exists;
}

describe("partition log: commit and read", () => {
  it("commits, reads back, reports stats", async () => {
    const log = await open();
    expect(await log.commitDurable(recs(1, 3))).toMatchObject({ baseOffset: 0, appended: 3, duplicates: 0 });
    now += 5;
    expect(await log.commitDurable(recs(4, 2))).toMatchObject({ baseOffset: 3, appended: 2, duplicates: 0 });
    const all = await readAll(log);
    expect(all.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4]);
    expect(all.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(all[4]!.commitMs).toBe(now);
    expect(all[4]!.key.toString()).toBe("k5");
    expect(await log.read(5, 10, 1000)).toEqual([]);
    expect((await log.read(2, 2, 1_000_000)).map((r) => r.offset)).toEqual([2, 3]);
    // maxBytes still returns at least one record.
    expect((await log.read(1, 10, 1)).map((r) => r.offset)).toEqual([1]);
    const s = log.stats();
    expect(s).toMatchObject({ index: 3, segments: 1, oldestOffset: 0, nextOffset: 5, highWatermark: 5 });
    expect(s.sizeBytes).toBe((await stat(segPath())).size);
  });

  it("serialises concurrent commits into contiguous offsets", async () => {
    const log = await open();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => log.commitDurable(recs(i * 3 + 1, 3))),
    );
    expect(results.map((r) => r.baseOffset)).toEqual(Array.from({ length: 10 }, (_, i) => i * 3));
    expect((await readAll(log)).map((r) => r.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it("splits large commits into several frames", async () => {
    const log = await open({ frameTargetBytes: 300 });
    await log.commitDurable(recs(1, 40));
    expect(log.stats().nextOffset).toBe(40);
    const log2 = await reopen(log);
    expect(log2.recovery.frames).toBeGreaterThan(5);
    expect((await readAll(log2)).map((r) => r.seq)).toEqual(recs(1, 40).map((r) => r.seq));
  });

  it("rejects a record larger than maxFrameBytes without writing", async () => {
    const log = await open({ maxFrameBytes: 200 });
    const err = await log.commitDurable(recs(1, 1, incA, 500)).catch((e: unknown) => e);
    expect(isLogError(err, "RECORD_TOO_LARGE")).toBe(true);
    expect(log.stats().nextOffset).toBe(0);
  });
});

describe("partition log: dedup by (incarnation, seq)", () => {
  it("drops re-commits, within a batch and across reopen", async () => {
    const log = await open();
    expect(await log.commitDurable([...recs(1, 3), ...recs(1, 2, incB)])).toMatchObject({ appended: 5 });
    expect(await log.commitDurable([...recs(2, 3), ...recs(2, 1, incB)])).toMatchObject({
      baseOffset: 5,
      appended: 1,
      duplicates: 3,
    });
    expect(await log.commitDurable(recs(1, 4))).toMatchObject({ baseOffset: -1, appended: 0, duplicates: 4 });
    expect(log.committedSeq(incA)).toBe(4);
    expect(log.committedSeq(incB)).toBe(2);
    expect(log.committedSeq("ffffffffffffffff")).toBe(0);
    const log2 = await reopen(log);
    expect(log2.committedSeq(incA)).toBe(4);
    expect(await log2.commitDurable(recs(3, 3))).toMatchObject({ baseOffset: 6, appended: 1, duplicates: 2 });
    expect((await readAll(log2)).length).toBe(7);
  });

  it("rejects malformed incarnations", async () => {
    const log = await open();
    const err = await log
      .commitDurable([{ ...recs(1, 1)[0]!, incarnation: "nothex" }])
      .catch((e: unknown) => e);
    expect(isLogError(err, "INVALID_RECORD")).toBe(true);
  });
});

describe("partition log: HWM never exposes unverified data", () => {
  it("a failing fsync rejects, keeps the HWM and truncates the tail", async () => {
    const io = new FaultyIo();
    const log = await open({ io });
    await log.commitDurable(recs(1, 2));
    const sizeBefore = (await stat(segPath())).size;
    io.failDatasync = 1;
    await expect(log.commitDurable(recs(3, 2))).rejects.toThrow(/injected fsync/);
    expect(log.stats()).toMatchObject({ nextOffset: 2, highWatermark: 2 });
    expect((await readAll(log)).length).toBe(2);
    expect((await stat(segPath())).size).toBe(sizeBefore);
    expect(log.committedSeq(incA)).toBe(2);
    // The retry (re-dispatch) lands at the same offsets.
    expect(await log.commitDurable(recs(3, 2))).toMatchObject({ baseOffset: 2, appended: 2, duplicates: 0 });
    expect((await readAll(log)).map((r) => r.seq)).toEqual([1, 2, 3, 4]);
  });

  it("a read-back mismatch rejects with COMMIT_VERIFY_FAILED", async () => {
    const io = new FaultyIo();
    const log = await open({ io });
    await log.commitDurable(recs(1, 2));
    io.corruptRead = 1;
    const err = await log.commitDurable(recs(3, 2)).catch((e: unknown) => e);
    expect(isLogError(err, "COMMIT_VERIFY_FAILED")).toBe(true);
    expect(log.stats().highWatermark).toBe(2);
    expect((await readAll(log)).length).toBe(2);
    expect(await log.commitDurable(recs(3, 2))).toMatchObject({ baseOffset: 2, appended: 2 });
  });

  it("a failed rollback marks the log failed; reopen recovers", async () => {
    const io = new FaultyIo();
    const log = await open({ io });
    await log.commitDurable(recs(1, 2));
    io.failDatasync = 1;
    io.failTruncate = 1;
    await expect(log.commitDurable(recs(3, 2))).rejects.toThrow(/injected fsync/);
    const err = await log.commitDurable(recs(3, 2)).catch((e: unknown) => e);
    expect(isLogError(err, "LOG_FAILED")).toBe(true);
    expect((await readAll(log)).length).toBe(2);
    // The unacked frame is whole on disk: reopen exposes it, and the
    // re-dispatch is deduplicated (see recovery.ts).
    const log2 = await reopen(log);
    expect(log2.stats().highWatermark).toBe(4);
    expect(await log2.commitDurable(recs(3, 2))).toMatchObject({ appended: 0, duplicates: 2 });
  });
});

describe("partition log: recovery", () => {
  it("serves only whole frames after truncation at random offsets", async () => {
    const log = await open();
    const ends: number[] = [];
    const counts: number[] = [];
    let total = 0;
    for (let i = 0; i < 12; i++) {
      const n = 1 + (i % 4);
      await log.commitDurable(recs(total + 1, n));
      total += n;
      ends.push((await stat(segPath())).size);
      counts.push(total);
    }
    await log.close();
    const original = await readFile(segPath());
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const cuts = [0, 1, 26, 27, ends[0]!, ends[0]! + 1, original.length - 1];
    for (let i = 0; i < 10; i++) cuts.push(rand() % original.length);
    for (const cut of cuts) {
      await writeFile(segPath(), original.subarray(0, cut));
      await rm(join(dir, "hwm"), { force: true });
      const whole = ends.filter((e) => e <= cut).length;
      const expected = whole === 0 ? 0 : counts[whole - 1]!;
      const l = await open();
      expect(l.stats().highWatermark, `cut ${cut}`).toBe(expected);
      expect(l.recovery.gaps).toBe(0);
      const got = await readAll(l);
      expect(got.map((r) => r.seq)).toEqual(Array.from({ length: expected }, (_, j) => j + 1));
      expect((await stat(segPath())).size).toBe(whole === 0 ? 0 : ends[whole - 1]!);
      expect(await l.commitDurable(recs(expected + 1, 2))).toMatchObject({
        baseOffset: expected,
        appended: 2,
      });
      await l.close();
    }
  });

  it("skips flipped bytes mid-segment as a counted gap and serves later frames", async () => {
    const log = await open();
    const ends: number[] = [];
    for (let i = 0; i < 10; i++) {
      await log.commitDurable(recs(i * 3 + 1, 3));
      ends.push((await stat(segPath())).size);
    }
    await log.close();
    const buf = await readFile(segPath());
    // Corrupt frame 4 (offsets 12..14) in its payload and frame 7's header.
    buf[ends[3]! + 40]! ^= 0xff;
    buf[ends[6]! + 5]! ^= 0x01;
    await writeFile(segPath(), buf);
    const l = await open();
    expect(l.recovery.gaps).toBe(2);
    expect(l.recovery.truncatedBytes).toBe(0);
    expect(l.stats().highWatermark).toBe(30);
    const got = (await readAll(l)).map((r) => r.offset);
    const missing = [12, 13, 14, 21, 22, 23];
    expect(got).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((o) => !missing.includes(o)));
    expect((await l.read(12, 2, 1 << 20)).map((r) => r.offset)).toEqual([15, 16]);
    expect((await l.read(22, 1, 1 << 20)).map((r) => r.offset)).toEqual([24]);
    expect(await l.commitDurable(recs(31, 1))).toMatchObject({ baseOffset: 30 });
    // Dedup still knows the surviving seqs.
    expect(l.committedSeq(incA)).toBe(31);
  });

  it("covers every row of the recovery decision table", async () => {
    const seen = new Set<string>();
    // valid-frame + torn-tail in the active segment.
    let log = await open({ segmentBytes: 200 });
    for (let i = 0; i < 6; i++) await log.commitDurable(recs(i + 1, 1));
    await log.close();
    const names = (await readdir(dir)).filter((n) => n.endsWith(".log")).sort();
    expect(names.length).toBeGreaterThan(2);
    const active = join(dir, names[names.length - 1]!);
    await truncate(active, (await stat(active)).size - 3);
    log = await open({ segmentBytes: 200 });
    if (log.recovery.frames > 0) seen.add("valid-frame");
    if (log.recovery.truncatedBytes > 0) seen.add("torn-tail");
    await log.close();
    // corrupt-tail in a sealed segment, and a gap.
    const sealed = join(dir, names[0]!);
    const s = await readFile(sealed);
    s[s.length - 2]! ^= 0xff;
    await writeFile(sealed, s);
    log = await open({ segmentBytes: 200 });
    if (log.recovery.corruptTailBytes > 0) seen.add("corrupt-tail");
    await log.close();
    log = await open({ frameTargetBytes: 60 });
    await log.commitDurable(recs(100, 4));
    const active2 = join(
      dir,
      (await readdir(dir))
        .filter((n) => n.endsWith(".log"))
        .sort()
        .pop()!,
    );
    await log.close();
    const a = await readFile(active2);
    a[30]! ^= 0xff;
    await writeFile(active2, a);
    log = await open({ segmentBytes: 200 });
    if (log.recovery.gaps > 0) seen.add("gap");
    expect([...seen].sort()).toEqual([...recoveryCases].sort());
  });

  it("never reuses offsets below a persisted hwm, even if the data was lost", async () => {
    const log = await open();
    await log.commitDurable(recs(1, 5));
    await log.close(); // forces the hwm file
    expect((await readFile(join(dir, "hwm"))).readBigUInt64BE(0)).toBe(5n);
    await truncate(segPath(), 10);
    const l = await open();
    expect(l.recovery.recoveredEnd).toBe(0);
    expect(l.stats().nextOffset).toBe(5);
    expect(await l.commitDurable(recs(1, 1, incB))).toMatchObject({ baseOffset: 5 });
    expect((await readAll(l)).map((r) => r.offset)).toEqual([5]);
    const l2 = await reopen(l);
    expect((await readAll(l2)).map((r) => r.offset)).toEqual([5]);
  });

  it("persists the hwm file on the interval", async () => {
    const log = await open({ hwmPersistIntervalMs: 20 });
    await log.commitDurable(recs(1, 3));
    await new Promise((r) => setTimeout(r, 80));
    expect((await readFile(join(dir, "hwm"))).readBigUInt64BE(0)).toBe(3n);
  });
});

describe("partition log: sparse index", () => {
  it("reads at every offset match a full scan", async () => {
    const log = await open({ indexIntervalBytes: 128, segmentBytes: 4096 });
    let seq = 1;
    for (let i = 0; i < 40; i++) {
      const n = 1 + (i % 5);
      await log.commitDurable(recs(seq, n, incA, 10 + (i % 7) * 9));
      seq += n;
    }
    let l = log;
    for (const phase of ["live", "reopened"]) {
      if (phase === "reopened") l = await reopen(log, { indexIntervalBytes: 128, segmentBytes: 4096 });
      expect(l.stats().segments).toBeGreaterThan(2);
      const all = await readAll(l);
      expect(all.length).toBe(seq - 1);
      for (let from = 0; from < all.length; from++) {
        const got = await l.read(from, 7, 1 << 20);
        expect(got.map((r) => r.seq)).toEqual(all.slice(from, from + 7).map((r) => r.seq));
      }
    }
  });
});

describe("partition log: segments and retention", () => {
  it("rolls segments and deletes sealed ones by age", async () => {
    const log = await open({ segmentBytes: 500 });
    for (let i = 0; i < 12; i++) {
      now += 1000;
      await log.commitDurable(recs(i * 2 + 1, 2));
    }
    const before = log.stats();
    expect(before.segments).toBeGreaterThan(3);
    expect(await log.applyRetention(0, 0)).toBe(0);
    // Everything older than 4.5 s: records committed at now-11000 .. now-5000.
    const deleted = await log.applyRetention(4500, 0);
    expect(deleted).toBeGreaterThan(0);
    const after = log.stats();
    expect(after.segments).toBe(before.segments - deleted);
    expect(after.oldestOffset).toBeGreaterThan(0);
    const err = await log.read(0, 10, 1000).catch((e: unknown) => e);
    expect(isLogError(err, "OFFSET_EXPIRED")).toBe(true);
    const rest = await readAll(log, after.oldestOffset);
    expect(rest[0]!.offset).toBe(after.oldestOffset);
    expect(rest.every((r) => r.commitMs >= now - 4500 - 1000)).toBe(true);
    // The active segment survives even when everything is expired.
    now += 1_000_000;
    await log.applyRetention(1, 0);
    expect(log.stats().segments).toBe(1);
    const files = (await readdir(dir)).filter((n) => n.endsWith(".log"));
    expect(files.length).toBe(1);
  });

  it("deletes sealed segments while over maxBytes", async () => {
    const log = await open({ segmentBytes: 500 });
    for (let i = 0; i < 12; i++) await log.commitDurable(recs(i * 2 + 1, 2));
    const size = log.stats().sizeBytes;
    const deleted = await log.applyRetention(0, Math.floor(size / 2));
    expect(deleted).toBeGreaterThan(0);
    expect(log.stats().sizeBytes).toBeLessThanOrEqual(Math.floor(size / 2));
    const l2 = await reopen(log, { segmentBytes: 500 });
    expect(l2.stats().oldestOffset).toBe(log.stats().oldestOffset);
    expect(await l2.commitDurable(recs(25, 1))).toMatchObject({ baseOffset: 24 });
  });
});

describe("partition log: dedup across retention (issue #13 item 9)", () => {
  it("still drops a re-sent record after retention deleted the segment that held it and the log reopened", async () => {
    const log = await open({ segmentBytes: 500 });
    // Incarnation A's records fill several segments, then B's come much later.
    for (let i = 0; i < 10; i++) await log.commitDurable(recs(i * 2 + 1, 2, incA));
    now += 1_000_000;
    for (let i = 0; i < 6; i++) await log.commitDurable(recs(i * 2 + 1, 2, incB));
    // Size retention keeps only the active segment: every record of A is gone.
    const deleted = await log.applyRetention(0, 1);
    expect(deleted).toBeGreaterThan(0);
    expect(log.stats().oldestOffset).toBeGreaterThanOrEqual(22);
    const l2 = await reopen(log, { segmentBytes: 500 });
    expect(l2.committedSeq(incA)).toBe(20);
    // A WAL whose checkpoint lagged re-sends A's last records: still duplicates.
    const res = await l2.commitDurable(recs(15, 6, incA));
    expect(res).toMatchObject({ appended: 0, duplicates: 6 });
    expect(l2.stats().nextOffset).toBe(log.stats().nextOffset);
    // A's new records and B's are unaffected.
    expect(await l2.commitDurable(recs(21, 1, incA))).toMatchObject({ appended: 1 });
    expect(await l2.commitDurable(recs(13, 1, incB))).toMatchObject({ appended: 1 });
  });
});

describe("idempotent producers", () => {
  /** Records with producer seqs `seqs`; the payload depends only on the producer seq, so a retry is exact. */
  function stamped(from: number, seqs: number[], epoch = 1, id = "prod-1", inc = incA): CommitRecord[] {
    return recs(from, seqs.length, inc).map((r, i) => ({
      ...r,
      key: Buffer.from(`key-${seqs[i]}`),
      payload: Buffer.from(`payload-${epoch}-${seqs[i]}`),
      producer: { id, epoch, seq: seqs[i]! },
    }));
  }

  it("appends the next sequences and answers exact retries (any incarnation) with their original offsets", async () => {
    const log = await open();
    expect(await log.commitDurable(stamped(1, [0, 1, 2]))).toEqual({
      baseOffset: 0,
      appended: 3,
      duplicates: 0,
      outcomes: [0, 1, 2],
    });
    // The same batch retried through another ingress WAL, then the next one.
    expect(await log.commitDurable(stamped(1, [0, 1, 2, 3], 1, "prod-1", incB))).toEqual({
      baseOffset: 3,
      appended: 1,
      duplicates: 3,
      outcomes: [0, 1, 2, 3],
    });
    // A retry inside one commit is answered with the offset its first copy gets.
    expect(await log.commitDurable(stamped(5, [4, 4, 5], 1, "prod-1", incB))).toMatchObject({
      appended: 2,
      duplicates: 1,
      outcomes: [4, 4, 5],
    });
    const all = await readAll(log);
    expect(all.map((r) => r.producer?.seq)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("refuses a gap, an older forgotten seq and a reused seq with other content (out of order)", async () => {
    const log = await open();
    await log.commitDurable(stamped(1, [0, 1]));
    expect(await log.commitDurable(stamped(3, [5, 6]))).toEqual({
      baseOffset: -1,
      appended: 0,
      duplicates: 0,
      outOfOrder: 2,
      outcomes: [commitOutcome.outOfOrder, commitOutcome.outOfOrder],
    });
    // Same (id, epoch, seq), other content: a second instance reusing the identity.
    const reused = stamped(5, [1]).map((r) => ({ ...r, payload: Buffer.from("other") }));
    expect(await log.commitDurable(reused)).toMatchObject({ appended: 0, outOfOrder: 1 });
    expect((await readAll(log)).length).toBe(2);
  });

  it("rebuilds the sequences and original offsets at open", async () => {
    let log = await open();
    await log.commitDurable(stamped(1, [0, 1, 2], 4));
    await log.commitDurable(recs(4, 2)); // plain records in between
    log = await reopen(log);
    expect(log.producerEpoch?.("prod-1")).toBe(4);
    expect(await log.commitDurable(stamped(1, [1, 2, 3], 4, "prod-1", incB))).toEqual({
      baseOffset: 5,
      appended: 1,
      duplicates: 2,
      outcomes: [1, 2, 5],
    });
    expect(await log.commitDurable(stamped(10, [5], 3, "prod-1", incB))).toEqual({
      baseOffset: -1,
      appended: 0,
      duplicates: 0,
      fenced: 1,
      outcomes: [commitOutcome.fenced],
    });
  });

  it("fences a lower epoch once a higher one committed, also within one batch", async () => {
    const log = await open();
    await log.commitDurable(stamped(1, [0, 1], 1));
    const mixed = [...stamped(3, [0], 2), ...stamped(4, [2], 1)];
    expect(await log.commitDurable(mixed)).toMatchObject({
      baseOffset: 2,
      appended: 1,
      duplicates: 0,
      fenced: 1,
    });
    expect(await log.commitDurable(stamped(5, [3], 1))).toMatchObject({ appended: 0, fenced: 1 });
    expect((await readAll(log)).map((r) => `${r.producer?.epoch}/${r.producer?.seq}`)).toEqual([
      "1/0",
      "1/1",
      "2/0",
    ]);
  });

  it("fences an epoch below the registry's even before the newer epoch wrote here", async () => {
    const log = await open({ producerEpoch: (id: string) => (id === "prod-1" ? 2 : undefined) });
    expect(await log.commitDurable(stamped(1, [0], 1))).toMatchObject({ appended: 0, fenced: 1 });
    expect(await log.commitDurable(stamped(2, [0], 2))).toMatchObject({ appended: 1 });
  });

  it("asks the registry's fence before the epoch checks: waits for it, stores nothing when it fails, plain commits skip it", async () => {
    let registryEpoch = 1;
    let gate: Promise<void> | undefined;
    let asked = 0;
    const log = await open({
      producerEpoch: () => registryEpoch,
      producerFence: () => {
        asked++;
        return gate;
      },
    });
    // A plain commit never asks.
    await log.commitDurable(recs(1, 1));
    expect(asked).toBe(0);
    // The lease holds (undefined): decided at once.
    expect(await log.commitDurable(stamped(2, [0], 1))).toMatchObject({ appended: 1 });
    expect(asked).toBe(1);
    // The lease ran out: the commit waits for the read, which brings epoch 2, so epoch 1 is fenced.
    let readDone: () => void = () => {};
    gate = new Promise<void>((resolve) => {
      readDone = resolve;
    });
    const pending = log.commitDurable(stamped(3, [1], 1));
    await new Promise((r) => setTimeout(r, 20));
    expect(log.stats().nextOffset).toBe(2);
    registryEpoch = 2;
    readDone();
    expect(await pending).toMatchObject({ appended: 0, fenced: 1 });
    // The read fails: the commit fails before anything is written; the log keeps working.
    gate = Promise.reject(new Error("registry unreadable"));
    gate.catch(() => {});
    await expect(log.commitDurable(stamped(4, [0], 2))).rejects.toThrow(/registry unreadable/);
    expect(log.stats().nextOffset).toBe(2);
    gate = undefined;
    expect(await log.commitDurable(stamped(4, [0], 2))).toMatchObject({ appended: 1, baseOffset: 2 });
  });

  it("answers a plain re-sent record with its offset (acks=all)", async () => {
    const log = await open();
    await log.commitDurable(recs(1, 3));
    expect(await log.commitDurable(recs(2, 3))).toMatchObject({
      appended: 1,
      duplicates: 2,
      outcomes: [1, 2, 3],
    });
  });

  it("answers a plain re-sent record with its offset after a reopen (rebuilt from the log)", async () => {
    // A restarted owner, or a newly elected leader opening the copy it
    // fetched, gets the records the dispatcher re-sends: their offsets come
    // from the log, not only from commits made since the open.
    let log = await open({ segmentBytes: 400 });
    await log.commitDurable(recs(1, 3));
    await log.commitDurable(recs(4, 3, incB));
    await log.commitDurable(recs(4, 2));
    log = await reopen(log, { segmentBytes: 400 });
    expect(await log.commitDurable([...recs(2, 2), ...recs(5, 1, incB), ...recs(5, 2)])).toMatchObject({
      appended: 1,
      duplicates: 4,
      outcomes: [1, 2, 4, 7, 8],
    });
  });
});
