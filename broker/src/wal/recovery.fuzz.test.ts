// Recovery over random bytes on disk: WAL directories and partition-log
// directories whose files are random, or real files with random bytes
// spliced in, overwritten or cut off (checkpoint and incarnation files too).
// Opening must never throw anything but a clear Error, every record it serves
// must be one that was written, and the store must take new writes after.
// NARAD_FUZZ_SEED=<n> replays a run; the seed is printed.

import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommitRecord, StoredRecord } from "../core/records.ts";
import { openPartitionLog } from "../log/partition-log.ts";
import { fuzzSeed, type Prng, prng } from "../testing/prng.ts";
import { openIngressWal } from "./ingress-wal.ts";
import { makeTempDir, readAll, sameRecord, smallOptions, testRecord } from "./wal-test-helpers.ts";

const seed = fuzzSeed(4242);
const trials = 20;

function damage(r: Prng, b: Buffer): Buffer {
  switch (r.int(5)) {
    case 0:
      return r.bytes(r.int(4096));
    case 1: {
      const at = r.int(b.length + 1);
      return Buffer.concat([b.subarray(0, at), r.bytes(1 + r.int(300)), b.subarray(at)]);
    }
    case 2: {
      const c = Buffer.from(b);
      const at = r.int(Math.max(1, c.length));
      r.bytes(Math.min(c.length - at, 1 + r.int(200))).copy(c, at);
      return c;
    }
    case 3:
      return b.subarray(0, r.int(b.length + 1));
    default:
      return Buffer.concat([b, r.bytes(r.int(100))]);
  }
}

let root: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  root = await makeTempDir();
});
afterAll(async () => {
  await root.cleanup();
});

describe(`recovery over random bytes (seed ${seed})`, () => {
  console.log(`recovery.fuzz: seed ${seed} (NARAD_FUZZ_SEED=${seed} reproduces)`);

  it("ingress WAL: opens, serves only written records, appends again", async () => {
    const r = prng(seed);
    const inputs = Array.from({ length: 120 }, (_, i) => testRecord(i));
    for (let t = 0; t < trials; t++) {
      const dir = join(root.dir, `wal-${t}`);
      const wal = await openIngressWal(smallOptions(dir));
      for (let i = 0; i < inputs.length; i += 4) await wal.append(inputs.slice(i, i + 4));
      if (r.bool(0.5)) await wal.setCheckpoint(1 + r.int(inputs.length));
      await wal.close();
      // A damaged incarnation file is refused at open on purpose (the dedup
      // identity must not change silently); mostly damage the other files.
      const all = (await readdir(dir)).sort();
      const names = r.bool(0.15) ? all : all.filter((n) => n !== "incarnation");
      for (let k = 1 + r.int(3); k > 0; k--) {
        const name = r.pick(names);
        await writeFile(join(dir, name), damage(r, await readFile(join(dir, name))));
      }
      let reopened: Awaited<ReturnType<typeof openIngressWal>>;
      try {
        reopened = await openIngressWal(smallOptions(dir));
      } catch (err) {
        // Refusing to open is acceptable only with a plain, explained Error.
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message.length).toBeGreaterThan(0);
        console.log(`recovery.fuzz: trial ${t} refused to open: ${(err as Error).message}`);
        continue;
      }
      const got = await readAll(reopened, 1);
      for (const rec of got) {
        const original = inputs[rec.seq - 1];
        expect(original, `trial ${t}: seq ${rec.seq} was never written`).toBeDefined();
        expect(sameRecord(rec, original!)).toBe(true);
      }
      const more = testRecord(999);
      const { firstSeq: seq } = await reopened.append([more]);
      const after = await reopened.read(seq, 1, 1 << 20);
      expect(sameRecord(after[0]!, more)).toBe(true);
      await reopened.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("partition log: opens, serves only written records, commits again", async () => {
    const r = prng(seed + 1);
    const written = (i: number): CommitRecord => ({
      key: Buffer.from(`k${i}`),
      createdMs: 1_700_000_000_000 + i,
      payload: Buffer.from(`payload-${i}-${"x".repeat(i % 40)}`),
      incarnation: "00000000000000aa",
      seq: i + 1,
    });
    for (let t = 0; t < trials; t++) {
      const dir = join(root.dir, `p${String(t).padStart(5, "0")}`);
      const opts = {
        dir,
        segmentBytes: 2048,
        indexIntervalBytes: 256,
        maxFrameBytes: 1 << 20,
        hwmPersistIntervalMs: 60_000,
        nowMs: () => 1_700_000_000_000,
      };
      const log = await openPartitionLog(opts);
      for (let i = 0; i < 100; i += 5)
        await log.commitDurable(Array.from({ length: 5 }, (_, j) => written(i + j)));
      await log.close();
      const names = (await readdir(dir)).filter((n) => !n.startsWith(".")).sort();
      for (let k = 1 + r.int(3); k > 0; k--) {
        const name = r.pick(names);
        await writeFile(join(dir, name), damage(r, await readFile(join(dir, name)))).catch(() => undefined);
      }
      let reopened: Awaited<ReturnType<typeof openPartitionLog>>;
      try {
        reopened = await openPartitionLog(opts);
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message.length).toBeGreaterThan(0);
        console.log(`recovery.fuzz: trial ${t} refused to open: ${(err as Error).message}`);
        continue;
      }
      const got: StoredRecord[] = [];
      for (let from = 0; ; ) {
        const page = await reopened.read(from, 50, 1 << 20);
        if (page.length === 0) break;
        got.push(...page);
        from = page[page.length - 1]!.offset + 1;
      }
      for (const rec of got) {
        const w = written(rec.seq - 1);
        expect(
          rec.key.equals(w.key) && rec.payload.equals(w.payload),
          `trial ${t}: offset ${rec.offset}`,
        ).toBe(true);
      }
      const res = await reopened.commitDurable([written(500)]);
      expect(res.appended).toBe(1);
      await reopened.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
