// Sealed segments read through the log store's bounded handle cache
// (segment-handles.ts). With a cache of 4 and hundreds of tiny segments:
// concurrent readers read every offset correctly, the process's fd count
// (/proc/self/fd) stays bounded, and a handle is never closed under a read
// that holds it, whether the cache evicts it, retention deletes its segment
// or a move install replaces the partition.

import { readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { isLogError } from "./log-errors.ts";
import { type LogFile, type LogIo, nodeLogIo } from "./log-io.ts";
import { type LogStore, openLogStore } from "./log-store.ts";
import { openPartitionLog } from "./partition-log.ts";

let root: string;
let store: LogStore | null = null;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-seg-handles-"));
});
afterEach(async () => {
  await store?.closeAll();
  store = null;
  await rm(root, { recursive: true, force: true });
});

const openFds = (): number => readdirSync("/proc/self/fd").length;

/** 10 records per commit, each commit its own segment (segmentBytes is tiny). */
function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: 1,
    payload: Buffer.from(`payload-${from + i}`),
    incarnation: "1111111111111111",
    seq: from + i + 1,
  }));
}

/**
 * Real files, with reads that can be held in flight (gate) and a check that
 * no handle is ever read after it was closed, or closed while a read is in it.
 */
function gatedIo() {
  const state = {
    gatePath: undefined as string | undefined,
    held: [] as Array<() => void>,
    violations: [] as string[],
    reading: new Map<string, number>(),
  };
  const io: LogIo = {
    ...nodeLogIo,
    async open(path, create) {
      const f = await nodeLogIo.open(path, create);
      let closed = false;
      let inFlight = 0;
      const wrapped: LogFile = {
        async read(buf, off, len, pos) {
          if (closed) state.violations.push(`read after close: ${path}`);
          inFlight++;
          try {
            if (state.gatePath !== undefined && path.endsWith(state.gatePath))
              await new Promise<void>((r) => state.held.push(r));
            return await f.read(buf, off, len, pos);
          } finally {
            inFlight--;
          }
        },
        writev: (b, p) => f.writev(b, p),
        datasync: () => f.datasync(),
        truncate: (n) => f.truncate(n),
        size: () => f.size(),
        close: async () => {
          if (inFlight > 0) state.violations.push(`closed under a read: ${path}`);
          closed = true;
          await f.close();
        },
      };
      return wrapped;
    },
  };
  return { io, state };
}

async function until(what: string, cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function filled(io: LogIo, maxSegmentFds: number, commits: number) {
  store = await openLogStore({
    dataDir: root,
    segmentBytes: 64,
    indexIntervalBytes: 32,
    maxFrameBytes: 1 << 20,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => 1_000,
    io,
    maxSegmentFds,
  });
  const log = await store.get("t", 0);
  for (let c = 0; c < commits; c++) await log.commitDurable(recs(c * 10, 10));
  return { s: store, log };
}

describe("sealed segment handle cache", () => {
  it("serves every offset to concurrent readers with 4 handles for 300 segments, fds bounded", async () => {
    const before = openFds();
    const { io, state } = gatedIo();
    const { s, log } = await filled(io, 4, 300);
    expect(log.stats().segments).toBe(300);
    const total = 3_000;
    let peakCache = 0;
    let peakFds = 0;
    // Four readers, each walking the whole log from its own start in pages
    // that cross segments, wrapping around.
    const reader = async (startAt: number, page: number) => {
      let offset = startAt;
      for (let seen = 0; seen < total; ) {
        const got = await log.read(offset, page, 1 << 20);
        expect(got.length).toBeGreaterThan(0);
        for (const r of got) {
          expect(r.offset).toBe(offset);
          expect(r.payload.toString()).toBe(`payload-${offset}`);
          offset = (offset + 1) % total;
          seen++;
          if (offset === 0) break;
        }
        peakCache = Math.max(peakCache, s.segmentFds().open);
        peakFds = Math.max(peakFds, openFds());
      }
    };
    await Promise.all([reader(0, 7), reader(1_234, 13), reader(2_999, 25), reader(600, 3)]);
    expect(peakCache).toBeLessThanOrEqual(4);
    expect(s.segmentFds().max).toBe(4);
    // Cache misses happened (the log is far bigger than the cache) and every one was closed again.
    expect(s.segmentFds().opens).toBeGreaterThan(300);
    // The active segment, the hwm file and the 4 cached handles; a little slack for
    // transient directory fsyncs. Before the cache this was +300.
    expect(peakFds - before).toBeLessThanOrEqual(4 + 2 + 6);
    expect(state.violations).toEqual([]);
  });

  it("a cache of 1 still serves concurrent readers (they queue, none deadlocks)", async () => {
    const { io, state } = gatedIo();
    const { s, log } = await filled(io, 1, 40);
    const results = await Promise.all(
      [0, 95, 210, 333].map((from) => log.read(from, 50, 1 << 20).then((rs) => rs.map((r) => r.offset))),
    );
    expect(results.map((r) => r[0])).toEqual([0, 95, 210, 333]);
    for (const r of results) expect(r).toEqual(Array.from({ length: r.length }, (_, i) => r[0]! + i));
    expect(s.segmentFds().open).toBeLessThanOrEqual(1);
    expect(state.violations).toEqual([]);
  });

  it("never evicts a handle a read holds; the held read returns the right records", async () => {
    const { io, state } = gatedIo();
    const { s, log } = await filled(io, 2, 20);
    // Hold a read of the segment with base offset 50 in its pread.
    state.gatePath = "00000000000000000050.log";
    const held = log.read(50, 10, 1 << 20);
    await until("the read is in flight", () => state.held.length > 0);
    state.gatePath = undefined;
    // Other reads cycle through the rest of the cache meanwhile.
    for (const from of [0, 10, 20, 30, 100, 150, 190]) {
      const rs = await log.read(from, 10, 1 << 20);
      expect(rs[0]!.offset).toBe(from);
    }
    expect(s.segmentFds().open).toBeLessThanOrEqual(2);
    for (const r of state.held.splice(0)) r();
    expect((await held).map((r) => r.payload.toString())).toEqual(
      Array.from({ length: 10 }, (_, i) => `payload-${50 + i}`),
    );
    expect(state.violations).toEqual([]);
  });

  it("retention deleting a segment under a read: the read finishes, its handle closes after, later reads expire", async () => {
    const { io, state } = gatedIo();
    const { s, log } = await filled(io, 4, 20);
    state.gatePath = "00000000000000000000.log";
    const held = log.read(0, 10, 1 << 20);
    await until("the read is in flight", () => state.held.length > 0);
    state.gatePath = undefined;
    // Size retention down to the active segment (segments are 1 ms old at most; by size).
    const deleted = await log.applyRetention(0, 1);
    expect(deleted).toBe(19);
    for (const r of state.held.splice(0)) r();
    expect((await held).map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    await until("the deleted segment's handle is closed", () => s.segmentFds().open === 0);
    const err = await log.read(0, 10, 1 << 20).catch((e: unknown) => e);
    expect(isLogError(err, "OFFSET_EXPIRED")).toBe(true);
    expect((await log.read(190, 10, 1 << 20)).map((r) => r.offset)[0]).toBe(190);
    expect(state.violations).toEqual([]);
  });

  it("a move install under a held read: the install waits for it, and the new log never sees the old handles", async () => {
    const { io, state } = gatedIo();
    const { s, log } = await filled(io, 4, 20);
    // A staged copy with other contents, at the same segment file names.
    const staged = join(root, "staged", "p00000");
    const copy = await openPartitionLog({
      dir: staged,
      segmentBytes: 64,
      indexIntervalBytes: 32,
      maxFrameBytes: 1 << 20,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 1_000,
    });
    for (let c = 0; c < 20; c++)
      await copy.commitDurable(
        recs(c * 10, 10).map((r) => ({ ...r, payload: Buffer.from(`moved-${r.seq - 1}`) })),
      );
    await copy.close();
    // Cache the old log's handles, then hold one read.
    await log.read(0, 200, 1 << 20);
    state.gatePath = "00000000000000000030.log";
    const held = log.read(30, 10, 1 << 20);
    await until("the read is in flight", () => state.held.length > 0);
    state.gatePath = undefined;
    let installed = false;
    const install = s.install("t", 0, staged).then(() => {
      installed = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(installed).toBe(false);
    for (const r of state.held.splice(0)) r();
    expect((await held).map((r) => r.payload.toString())[0]).toBe("payload-30");
    await install;
    const fresh = await s.get("t", 0);
    const all = await fresh.read(0, 200, 1 << 20);
    expect(all).toHaveLength(200);
    expect(all.every((r) => r.payload.toString() === `moved-${r.offset}`)).toBe(true);
    expect(s.segmentFds().open).toBeLessThanOrEqual(4);
    expect(state.violations).toEqual([]);
  });
});
