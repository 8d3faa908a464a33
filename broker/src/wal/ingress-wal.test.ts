import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFaultyIo } from "../testing/faulty-io.ts";
import { openIngressWal } from "./ingress-wal.ts";
import type { IngressWal } from "./types.ts";
import { makeTempDir, readAll, sameRecord, smallOptions, testRecord } from "./wal-test-helpers.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function tempDir(): Promise<string> {
  const t = await makeTempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

async function open(
  dir: string,
  extra: Parameters<typeof openIngressWal>[0] | object = {},
): Promise<IngressWal> {
  const wal = await openIngressWal({ ...smallOptions(dir), ...extra });
  cleanups.unshift(() => wal.close().catch(() => {}));
  return wal;
}

async function walFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith(".wal")).sort();
}

describe("ingress WAL: append, read, reopen", () => {
  it("assigns dense seqs, serves them from memory and, after reopen, from disk", async () => {
    const dir = await tempDir();
    const wal = await open(dir);
    expect(wal.incarnation).toMatch(/^[0-9a-f]{16}$/);
    const inputs = Array.from({ length: 300 }, (_, i) => testRecord(i));
    const a = await wal.append(inputs.slice(0, 1));
    const b = await wal.append(inputs.slice(1));
    expect(a).toEqual({ firstSeq: 1, lastSeq: 1 });
    expect(b).toEqual({ firstSeq: 2, lastSeq: 300 });
    const hot = await readAll(wal);
    expect(hot.map((r) => r.seq)).toEqual(inputs.map((_, i) => i + 1));
    expect(hot.every((r, i) => sameRecord(r, inputs[i]!))).toBe(true);
    expect(wal.stats()).toMatchObject({ nextSeq: 301, checkpoint: 1, pendingRecords: 300, poisoned: false });
    const incarnation = wal.incarnation;
    await wal.close();

    const again = await open(dir);
    expect(again.incarnation).toBe(incarnation);
    const cold = await readAll(again, 1, 13);
    expect(cold.every((r, i) => r.seq === i + 1 && sameRecord(r, inputs[i]!))).toBe(true);
    expect((await again.read(150, 5, 1 << 20)).map((r) => r.seq)).toEqual([150, 151, 152, 153, 154]);
    expect(await again.append([testRecord(1000)])).toEqual({ firstSeq: 301, lastSeq: 301 });
    expect((await again.read(301, 10, 1 << 20))[0]!.seq).toBe(301);
    expect(again.stats().corruptFrames).toBe(0);
  });

  it("honours maxRecords and maxBytes but always returns at least one record", async () => {
    const wal = await open(await tempDir());
    await wal.append(Array.from({ length: 20 }, (_, i) => testRecord(i, 100)));
    expect(await wal.read(1, 3, 1 << 20)).toHaveLength(3);
    expect(await wal.read(5, 100, 1)).toHaveLength(1);
    expect((await wal.read(5, 100, 400)).length).toBeLessThan(4);
    expect(await wal.read(21, 10, 1000)).toEqual([]);
  });

  it("rejects oversized and malformed records before staging", async () => {
    const dir = await tempDir();
    const io = createFaultyIo();
    const wal = await open(dir, { io });
    io.resetCounts();
    await expect(wal.append([testRecord(1, 5000)])).rejects.toMatchObject({ code: "RECORD_TOO_LARGE" });
    await expect(wal.append([{ ...testRecord(1), partition: -1 }])).rejects.toMatchObject({
      code: "RECORD_INVALID",
    });
    await expect(wal.append([])).rejects.toMatchObject({ code: "RECORD_INVALID" });
    expect(io.counts.write).toBe(0);
    expect(await wal.append([testRecord(2)])).toEqual({ firstSeq: 1, lastSeq: 1 });
  });
});

describe("ingress WAL: group commit", () => {
  it("shares one write and one fdatasync among concurrent appends", async () => {
    const io = createFaultyIo();
    // A slow disk: each fdatasync takes 3 ms, so appends pile up behind it.
    io.setHook((op) => (op === "datasync" ? new Promise((r) => setTimeout(r, 3)) : undefined));
    const wal = await open(await tempDir(), { io, segmentBytes: 4 << 20, maxGroupBytes: 1 << 20 });
    io.resetCounts();
    // Closed loop: 50 producers, each appending 40 records one after another.
    const producers = 50;
    const perProducer = 40;
    const n = producers * perProducer;
    let durableCalls = 0;
    wal.onDurable(() => durableCalls++);
    const t0 = performance.now();
    const perClient = await Promise.all(
      Array.from({ length: producers }, async (_, p) => {
        const got = [];
        for (let i = 0; i < perProducer; i++) got.push(await wal.append([testRecord(p * perProducer + i)]));
        return got;
      }),
    );
    const results = perClient.flat();
    const ms = performance.now() - t0;
    const seqs = results.map((r) => r.firstSeq).sort((x, y) => x - y);
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const syncs = io.counts.datasync;
    console.log(
      `group commit: ${n} appends, ${syncs} fdatasyncs, ${io.counts.write} writes ` +
        `(${(n / syncs).toFixed(1)} appends/fdatasync), ${Math.round(n / (ms / 1000))} appends/s`,
    );
    expect(syncs).toBe(io.counts.write);
    expect(syncs).toBeLessThan(n / 10);
    expect(durableCalls).toBe(syncs);
  });

  it("resolves an append only after its fdatasync returns", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    io.resetCounts();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    io.setHook((op) => (op === "datasync" ? gate : undefined));
    let settled = false;
    const p = wal.append([testRecord(1)]).then((r) => {
      settled = true;
      return r;
    });
    // A second append arriving while the first group is in flight is staged for the next group.
    await new Promise((r) => setTimeout(r, 20));
    const q = wal.append([testRecord(2)]);
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    expect(await wal.read(1, 10, 1 << 20)).toEqual([]);
    expect(io.counts.write).toBe(1);
    release();
    expect(await p).toEqual({ firstSeq: 1, lastSeq: 1 });
    expect(await q).toEqual({ firstSeq: 2, lastSeq: 2 });
    expect(io.counts.datasync).toBe(2);
  });

  it("splits staged appends into groups of at most maxGroupBytes", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io, maxGroupBytes: 2048, segmentBytes: 1 << 20 });
    io.resetCounts();
    // 40 appends of ~300 bytes = ~12 KiB staged in one tick → at least 6 groups.
    await Promise.all(Array.from({ length: 40 }, (_, i) => wal.append([testRecord(i, 270)])));
    expect(io.counts.write).toBeGreaterThanOrEqual(6);
    expect((await readAll(wal)).length).toBe(40);
  });
});

describe("ingress WAL: poison", () => {
  it("rejects the failing group and every later append after an fdatasync EIO", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    await wal.append([testRecord(0)]);
    io.inject({ op: "datasync", code: "EIO" });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => wal.append([testRecord(i)])),
    );
    const later = await Promise.allSettled([wal.append([testRecord(99)])]);
    for (const o of [...outcomes, ...later]) {
      expect(o.status).toBe("rejected");
      expect((o as PromiseRejectedResult).reason).toMatchObject({ code: "WAL_POISONED" });
    }
    expect(io.counts.datasync).toBe(2); // never retried
    expect(wal.stats()).toMatchObject({ poisoned: true, nextSeq: 2 });
    // What was durable before the failure is still served.
    expect((await readAll(wal)).map((r) => r.seq)).toEqual([1]);
  });

  it("poisons on a failed write too, including appends staged behind it", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    io.setHook((op) => (op === "write" ? gate : undefined));
    // EIO (ENOSPC is retryable: see disk-full.test.ts).
    io.inject({ op: "write", code: "EIO", pathIncludes: ".wal" });
    const first = wal.append([testRecord(1)]);
    await new Promise((r) => setTimeout(r, 10));
    const staged = Array.from({ length: 10 }, (_, i) => wal.append([testRecord(i)]));
    release();
    const all = await Promise.allSettled([first, ...staged]);
    expect(all.every((o) => o.status === "rejected" && o.reason.code === "WAL_POISONED")).toBe(true);
    expect(io.counts.datasync).toBe(0);
    expect(wal.stats().poisoned).toBe(true);
  });
  it("poisons when rolling to a new segment fails", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    io.inject({ op: "open", pathIncludes: ".wal" });
    const batch = Array.from({ length: 30 }, (_, i) => testRecord(i, 150));
    const outcomes = await Promise.allSettled([wal.append(batch), wal.append(batch), wal.append(batch)]);
    expect(outcomes[0]!.status).toBe("fulfilled"); // fits the first segment
    const rejected = outcomes.filter((o) => o.status === "rejected") as PromiseRejectedResult[];
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((o) => o.reason.code === "WAL_POISONED")).toBe(true);
    expect(wal.stats().poisoned).toBe(true);
  });
});

describe("ingress WAL: checkpoint, compaction, rotation", () => {
  it("persists the checkpoint and rejects moving it backwards or past the durable end", async () => {
    const dir = await tempDir();
    const wal = await open(dir);
    await wal.append(Array.from({ length: 10 }, (_, i) => testRecord(i)));
    await wal.setCheckpoint(6);
    await expect(wal.setCheckpoint(5)).rejects.toMatchObject({ code: "CHECKPOINT_INVALID" });
    await expect(wal.setCheckpoint(12)).rejects.toMatchObject({ code: "CHECKPOINT_INVALID" });
    await wal.setCheckpoint(6); // same value: allowed, still compacts
    expect(wal.stats()).toMatchObject({ checkpoint: 6, pendingRecords: 5 });
    await wal.close();
    const again = await open(dir);
    expect(again.stats()).toMatchObject({ checkpoint: 6, nextSeq: 11, pendingRecords: 5 });
    expect((await stat(join(dir, "checkpoint"))).size).toBe(8);
  });

  it("keeps the old checkpoint when a checkpoint write fails before its rename (crash point C1)", async () => {
    const dir = await tempDir();
    const io = createFaultyIo();
    const wal = await open(dir, { io });
    await wal.append(Array.from({ length: 10 }, (_, i) => testRecord(i)));
    await wal.setCheckpoint(4);
    io.inject({ op: "rename", pathIncludes: "checkpoint", times: 1 });
    await expect(wal.setCheckpoint(8)).rejects.toMatchObject({ code: "EIO" });
    expect(wal.stats().checkpoint).toBe(4);
    await wal.close();
    expect((await readdir(dir)).includes("checkpoint.tmp")).toBe(true);
    const again = await open(dir);
    expect(again.stats().checkpoint).toBe(4);
    expect((await readdir(dir)).includes("checkpoint.tmp")).toBe(false);
    await again.setCheckpoint(8);
    expect(again.stats().checkpoint).toBe(8);
  });

  it("deletes segments below the checkpoint and keeps an idle, dispatched WAL small", async () => {
    const dir = await tempDir();
    const wal = await open(dir);
    for (let i = 0; i < 40; i++)
      await wal.append(Array.from({ length: 10 }, (_, j) => testRecord(i * 10 + j)));
    const before = wal.stats();
    expect(before.segments).toBeGreaterThan(3);
    expect((await walFiles(dir)).length).toBe(before.segments);
    // Half dispatched: only segments wholly below the checkpoint go.
    await wal.setCheckpoint(200);
    const mid = wal.stats();
    expect(mid.segments).toBeLessThan(before.segments);
    expect((await readAll(wal, 200))[0]!.seq).toBe(200);
    // Everything dispatched: the big active segment is rolled and deleted too.
    await wal.setCheckpoint(before.nextSeq);
    const after = wal.stats();
    expect(after).toMatchObject({ segments: 1, diskBytes: 0, pendingRecords: 0 });
    const files = await walFiles(dir);
    expect(files).toEqual([`${String(before.nextSeq).padStart(20, "0")}.wal`]);
    expect((await stat(join(dir, files[0]!))).size).toBe(0);
    // Appends continue with the next seq in the fresh segment, and survive reopen.
    expect(await wal.append([testRecord(7)])).toEqual({ firstSeq: before.nextSeq, lastSeq: before.nextSeq });
    await wal.close();
    const again = await open(dir);
    expect((await readAll(again, 1)).map((r) => r.seq)).toEqual([before.nextSeq]);
  });

  it("does not roll a dispatched active segment below rotateDispatchedBytes", async () => {
    const dir = await tempDir();
    const wal = await open(dir);
    await wal.append([testRecord(1, 100)]);
    await wal.setCheckpoint(2);
    expect(wal.stats().segments).toBe(1);
    expect((await walFiles(dir)).length).toBe(1);
    expect(wal.stats().diskBytes).toBeGreaterThan(0);
  });

  it("rolls a dispatched active segment at the next group when appends were in flight", async () => {
    const dir = await tempDir();
    const wal = await open(dir);
    for (let i = 0; i < 3; i++)
      await wal.append(Array.from({ length: 10 }, (_, j) => testRecord(i * 10 + j, 150)));
    const pending = wal.append([testRecord(100)]); // in flight while the checkpoint lands
    await wal.setCheckpoint(31);
    await pending;
    await wal.append([testRecord(101)]);
    // The in-flight group kept seq 31 in the old segment; once it is dispatched the roll happens.
    await wal.setCheckpoint(33);
    expect(wal.stats().segments).toBe(1);
    expect(wal.stats().diskBytes).toBe(0);
  });
});

describe("ingress WAL: read throughput (rough, printed, not asserted)", () => {
  it("reads sequentially from the tail cache and, after reopen, from disk with a cursor", async () => {
    const dir = await tempDir();
    const big = { segmentBytes: 4 << 20, maxGroupBytes: 1 << 20, rotateDispatchedBytes: 1 << 20 };
    const wal = await open(dir, big);
    const total = 40_000;
    const batch = Array.from({ length: 200 }, (_, i) => testRecord(i, 100));
    let t0 = performance.now();
    const pending = [];
    for (let i = 0; i < total; i += batch.length) pending.push(wal.append(batch));
    await Promise.all(pending);
    const appendMs = performance.now() - t0;
    const page = async (w: IngressWal) => {
      let next = 1;
      let n = 0;
      for (;;) {
        const got = await w.read(next, 4096, 8 << 20);
        if (got.length === 0) return n;
        n += got.length;
        next = got[got.length - 1]!.seq + 1;
      }
    };
    await page(wal); // warm up the decode path
    t0 = performance.now();
    const hot = await page(wal);
    const hotMs = performance.now() - t0;
    await wal.close();
    const io = createFaultyIo();
    const again = await open(dir, { ...big, io });
    io.resetCounts();
    t0 = performance.now();
    const cold = await page(again);
    const coldMs = performance.now() - t0;
    expect(hot).toBe(total);
    expect(cold).toBe(total);
    const rate = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString()} records/s`;
    console.log(
      `wal (200-record appends, ~150 B frames): append ${rate(total, appendMs)}; ` +
        `read from tail cache ${rate(hot, hotMs)}; from disk ${rate(cold, coldMs)} in ${io.counts.read} read calls`,
    );
  });
});
