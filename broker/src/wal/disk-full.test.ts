// A full disk (ENOSPC) is refused and survived, not fatal: the group that hit
// it and everything staged behind it get DISK_FULL, partial bytes are cut off
// again, seqs stay dense, and appends work again without reopening. Failures
// that may have lost acknowledged-looking bytes (fdatasync, or the cut itself)
// still poison.

import { stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFaultyIo } from "../testing/faulty-io.ts";
import { openIngressWal } from "./ingress-wal.ts";
import { segmentFileName } from "./segments.ts";
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

async function open(dir: string, extra: object = {}): Promise<IngressWal> {
  const wal = await openIngressWal({ ...smallOptions(dir), ...extra });
  cleanups.unshift(() => wal.close().catch(() => {}));
  return wal;
}

describe("ingress WAL: disk full", () => {
  it("a write that fills the disk midway: refused, partial bytes cut off, the next append reuses the seq", async () => {
    const dir = await tempDir();
    const io = createFaultyIo();
    const wal = await open(dir, { io });
    await wal.append([testRecord(0)]);
    const segment = join(dir, segmentFileName(1));
    const durableBytes = (await stat(segment)).size;
    io.inject({ op: "write", code: "ENOSPC", pathIncludes: ".wal", times: 1, partialBytes: 25 });
    await expect(wal.append([testRecord(1)])).rejects.toMatchObject({ code: "DISK_FULL" });
    expect((await stat(segment)).size).toBe(durableBytes);
    expect(wal.stats().poisoned).toBe(false);
    // Space is back: the same seq is handed out again, so the file stays dense.
    expect(await wal.append([testRecord(2)])).toEqual({ firstSeq: 2, lastSeq: 2 });
    await wal.close();
    const reopened = await open(dir);
    const got = await readAll(reopened);
    expect(got.map((r) => r.seq)).toEqual([1, 2]);
    expect(sameRecord(got[1]!, testRecord(2))).toBe(true);
    expect(reopened.stats().corruptFrames).toBe(0);
  });

  it("appends staged behind the failing group are refused too; later ones succeed", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    io.setHook((op) => (op === "write" ? gate : undefined));
    io.inject({ op: "write", code: "ENOSPC", pathIncludes: ".wal", times: 1 });
    const first = wal.append([testRecord(1)]);
    await new Promise((r) => setTimeout(r, 10));
    const staged = Array.from({ length: 10 }, (_, i) => wal.append([testRecord(i)]));
    release();
    const all = await Promise.allSettled([first, ...staged]);
    expect(all.every((o) => o.status === "rejected" && o.reason.code === "DISK_FULL")).toBe(true);
    io.setHook(undefined);
    const ok = await Promise.all(Array.from({ length: 5 }, (_, i) => wal.append([testRecord(100 + i)])));
    expect(ok.map((r) => r.firstSeq)).toEqual([1, 2, 3, 4, 5]);
    expect((await readAll(wal)).every((r, i) => sameRecord(r, testRecord(100 + i)))).toBe(true);
  });

  it("a roll that cannot create its segment is refused and retried on the next append", async () => {
    const dir = await tempDir();
    const io = createFaultyIo();
    const wal = await open(dir, { io });
    const batch = Array.from({ length: 30 }, (_, i) => testRecord(i, 150));
    await wal.append(batch);
    await wal.append(batch); // ~12 KiB of the 16 KiB segment: the next batch rolls
    io.inject({ op: "open", code: "ENOSPC", pathIncludes: ".wal", times: 2 });
    await expect(wal.append(batch)).rejects.toMatchObject({ code: "DISK_FULL" });
    await expect(wal.append(batch)).rejects.toMatchObject({ code: "DISK_FULL" });
    expect(await wal.append(batch)).toEqual({ firstSeq: 61, lastSeq: 90 });
    await wal.close();
    const reopened = await open(dir);
    expect((await readAll(reopened)).map((r) => r.seq)).toEqual(Array.from({ length: 90 }, (_, i) => i + 1));
  });

  it("still poisons when the partial bytes cannot be cut off, and on a failed fdatasync", async () => {
    const io = createFaultyIo();
    const wal = await open(await tempDir(), { io });
    await wal.append([testRecord(0)]);
    io.inject({ op: "write", code: "ENOSPC", pathIncludes: ".wal", times: 1, partialBytes: 10 });
    io.inject({ op: "truncate", code: "EIO", pathIncludes: ".wal", times: 1 });
    await expect(wal.append([testRecord(1)])).rejects.toMatchObject({ code: "WAL_POISONED" });
    expect(wal.stats().poisoned).toBe(true);

    const io2 = createFaultyIo();
    const wal2 = await open(await tempDir(), { io: io2 });
    io2.inject({ op: "datasync", code: "ENOSPC", pathIncludes: ".wal", times: 1 });
    await expect(wal2.append([testRecord(1)])).rejects.toMatchObject({ code: "WAL_POISONED" });
    expect(wal2.stats().poisoned).toBe(true);
  });
});
