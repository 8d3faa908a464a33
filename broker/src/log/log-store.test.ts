import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { isLogError } from "./log-errors.ts";
import { type LogStore, openLogStore } from "./log-store.ts";

let root: string;
let now: number;
let store: LogStore | null = null;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-lstore-"));
  now = 1_000_000;
});

afterEach(async () => {
  await store?.closeAll();
  store = null;
  await rm(root, { recursive: true, force: true });
});

async function open(topicExists?: (topic: string) => boolean): Promise<LogStore> {
  store = await openLogStore({
    ...(topicExists === undefined ? {} : { topicExists }),
    dataDir: root,
    segmentBytes: 400,
    indexIntervalBytes: 128,
    maxFrameBytes: 1 << 20,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => now,
  });
  return store;
}

function recs(from: number, n: number): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from("k"),
    createdMs: 1,
    payload: Buffer.alloc(30, i),
    incarnation: "1111111111111111",
    seq: from + i,
  }));
}

describe("log store", () => {
  it("never re-creates the directory of a topic the metastore no longer has (issue #13 item 1)", async () => {
    const live = new Set(["t"]);
    const s = await open((t) => live.has(t));
    await (await s.get("t", 0)).commitDurable(recs(1, 3));
    // DELETE: the metastore first, then the files.
    live.delete("t");
    await s.deleteTopic("t");
    // A read, a retention pass or a dispatcher lane that raced the DELETE.
    const err = await s.get("t", 0).catch((e: unknown) => e);
    expect(isLogError(err, "TOPIC_DELETED")).toBe(true);
    await expect(stat(join(root, "topics", "t"))).rejects.toThrow();
    expect(s.has("t")).toBe(false);
    // Created again: its partitions start empty.
    live.add("t");
    expect((await s.get("t", 0)).stats().nextOffset).toBe(0);
  });

  it("opens lazily, shares concurrent opens, lists topics", async () => {
    const s = await open();
    expect(s.topics()).toEqual([]);
    const [a, b] = await Promise.all([s.get("orders", 2), s.get("orders", 2)]);
    expect(a).toBe(b);
    await a.commitDurable(recs(1, 2));
    await s.get("audit.log-1", 0);
    expect(s.topics()).toEqual(["audit.log-1", "orders"]);
    expect(s.has("orders")).toBe(true);
    expect(await readdir(join(root, "topics", "orders"))).toEqual(["p00002"]);
    await s.closeAll();
    const s2 = await open();
    expect(s2.topics()).toEqual(["audit.log-1", "orders"]);
    const again = await s2.get("orders", 2);
    expect((await again.read(0, 10, 1 << 20)).length).toBe(2);
  });

  it("refuses names that could escape dataDir", async () => {
    const s = await open();
    for (const bad of [".", "..", "a/b", "..\\x", ""]) {
      const err = await s.get(bad, 0).catch((e: unknown) => e);
      expect(isLogError(err, "INVALID_NAME"), bad).toBe(true);
    }
    await expect(s.deleteTopic("..")).rejects.toThrow(/INVALID_NAME/);
    await expect(s.get("ok", -1)).rejects.toThrow(/INVALID_NAME/);
    await expect(s.get("ok", 100_000)).rejects.toThrow(/INVALID_NAME/);
  });

  it("deleteTopic closes logs and removes the directory", async () => {
    const s = await open();
    const log = await s.get("gone", 0);
    await log.commitDurable(recs(1, 3));
    await s.get("gone", 1);
    await s.get("kept", 0);
    await s.deleteTopic("gone");
    expect(s.has("gone")).toBe(false);
    expect(s.topics()).toEqual(["kept"]);
    await expect(stat(join(root, "topics", "gone"))).rejects.toThrow(/ENOENT/);
    expect(await readdir(join(root, "topics-trash"))).toEqual([]);
    await expect(log.read(0, 1, 1)).rejects.toThrow(/LOG_CLOSED/);
    // Recreating starts empty.
    const fresh = await s.get("gone", 0);
    expect(fresh.stats().nextOffset).toBe(0);
  });

  it("cleans leftover trash at open", async () => {
    await mkdir(join(root, "topics-trash", "old.1.0", "p00000"), { recursive: true });
    await open();
    expect(await readdir(join(root, "topics-trash"))).toEqual([]);
  });

  it("retentionPass applies policies to every partition on disk", async () => {
    const s = await open();
    for (const p of [0, 1]) {
      const log = await s.get("t", p);
      for (let i = 0; i < 10; i++) await log.commitDurable(recs(i * 2 + 1, 2));
    }
    await s.closeAll();
    const s2 = await open();
    now += 10_000;
    const deleted = await s2.retentionPass(new Map([["t", { retentionMs: 1000, maxBytes: 0 }]]));
    expect(deleted).toBeGreaterThan(1);
    for (const p of [0, 1]) expect((await s2.get("t", p)).stats().segments).toBe(1);
  });
});
