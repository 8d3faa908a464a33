import { cp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WalRecordInput } from "../core/records.ts";
import { checkWalFrame, encodeWalFrames } from "../core/wal-codec.ts";
import { openIngressWal } from "./ingress-wal.ts";
import { scanSegment } from "./recovery.ts";
import { makeTempDir, prng, readAll, sameRecord, smallOptions, testRecord } from "./wal-test-helpers.ts";

interface Frame {
  seq: number;
  start: number;
  end: number;
}

function framesOf(buf: Buffer): Frame[] {
  const out: Frame[] = [];
  for (let at = 0; at < buf.length; ) {
    const c = checkWalFrame(buf, at, buf.length);
    if (c.kind !== "ok") throw new Error(`template frame at ${at} is ${c.kind}`);
    out.push({ seq: c.seq, start: at, end: at + c.frameBytes });
    at += c.frameBytes;
  }
  return out;
}

async function segmentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith(".wal")).sort();
}

// One template WAL (several segments) copied for each trial.
let root: { dir: string; cleanup: () => Promise<void> };
let template: string;
const inputs: WalRecordInput[] = Array.from({ length: 300 }, (_, i) => testRecord(i));
let segments: Array<{ name: string; frames: Frame[] }> = [];

beforeAll(async () => {
  root = await makeTempDir();
  template = join(root.dir, "template");
  const wal = await openIngressWal(smallOptions(template));
  for (let i = 0; i < inputs.length; i += 5) await wal.append(inputs.slice(i, i + 5));
  await wal.close();
  for (const name of await segmentFiles(template)) {
    segments.push({ name, frames: framesOf(await readFile(join(template, name))) });
  }
  expect(segments.length).toBeGreaterThanOrEqual(3);
});

afterAll(async () => {
  await root.cleanup();
  segments = [];
});

let trialNo = 0;
async function trialDir(): Promise<string> {
  const dir = join(root.dir, `trial-${trialNo++}`);
  await cp(template, dir, { recursive: true });
  return dir;
}

describe("ingress WAL recovery", () => {
  it("truncates a torn last segment at any offset and continues without reusing a seen seq", async () => {
    const seed = 20_240_611;
    const rand = prng(seed);
    const last = segments[segments.length - 1]!;
    const lastSize = last.frames[last.frames.length - 1]!.end;
    for (let t = 0; t < 12; t++) {
      const dir = await trialDir();
      const cut = Math.floor(rand() * lastSize);
      await truncate(join(dir, last.name), cut);
      const whole = last.frames.filter((f) => f.end <= cut);
      const lastWhole = whole.length > 0 ? whole[whole.length - 1]!.seq : last.frames[0]!.seq - 1;
      // A torn frame whose header (magic, length, seq) survived names a seq that is skipped.
      const torn = last.frames.find((f) => f.start < cut && f.end > cut);
      const expectedNext = torn !== undefined && cut - torn.start >= 16 ? torn.seq + 1 : lastWhole + 1;

      const wal = await openIngressWal(smallOptions(dir));
      const ctx = `seed ${seed} trial ${t} cut ${cut}`;
      const got = await readAll(wal);
      expect(
        got.map((r) => r.seq),
        ctx,
      ).toEqual(Array.from({ length: lastWhole }, (_, i) => i + 1));
      expect(
        got.every((r) => sameRecord(r, inputs[r.seq - 1]!)),
        ctx,
      ).toBe(true);
      expect(wal.stats(), ctx).toMatchObject({ nextSeq: expectedNext, corruptFrames: 0 });
      expect(await wal.append([testRecord(9000 + t)]), ctx).toEqual({
        firstSeq: expectedNext,
        lastSeq: expectedNext,
      });
      await wal.close();

      const again = await openIngressWal(smallOptions(dir));
      const after = await readAll(again);
      expect(after.map((r) => r.seq).slice(-1), ctx).toEqual([expectedNext]);
      expect(after.length, ctx).toBe(lastWhole + 1);
      expect(again.stats().corruptFrames, ctx).toBe(0);
      await again.close();
      await rm(dir, { recursive: true });
    }
  });

  it("truncates a zero-filled tail (file extended, data never written)", async () => {
    const dir = await trialDir();
    const last = segments[segments.length - 1]!;
    const path = join(dir, last.name);
    await writeFile(path, Buffer.concat([await readFile(path), Buffer.alloc(4096)]));
    const wal = await openIngressWal(smallOptions(dir));
    expect((await readAll(wal)).length).toBe(inputs.length);
    expect(wal.stats()).toMatchObject({ nextSeq: inputs.length + 1, corruptFrames: 0 });
    await wal.close();
  });

  it("detects a flipped byte in the middle, never serves that record, serves every other one", async () => {
    const seed = 77_001;
    const rand = prng(seed);
    for (let t = 0; t < 12; t++) {
      const dir = await trialDir();
      const segIdx = Math.floor(rand() * segments.length);
      const seg = segments[segIdx]!;
      // Not the very last frame of the WAL: that one is indistinguishable from a torn tail.
      const isLastSeg = segIdx === segments.length - 1;
      const frame = seg.frames[Math.floor(rand() * (seg.frames.length - (isLastSeg ? 1 : 0)))]!;
      const at = frame.start + Math.floor(rand() * (frame.end - frame.start));
      const path = join(dir, seg.name);
      const bytes = await readFile(path);
      bytes[at] = bytes[at]! ^ (1 + Math.floor(rand() * 255));
      await writeFile(path, bytes);

      const ctx = `seed ${seed} trial ${t} segment ${seg.name} seq ${frame.seq} byte ${at}`;
      const wal = await openIngressWal(smallOptions(dir));
      expect(wal.stats().corruptFrames, ctx).toBe(1);
      const got = await readAll(wal, 1, 7);
      expect(
        got.map((r) => r.seq),
        ctx,
      ).toEqual(Array.from({ length: inputs.length }, (_, i) => i + 1).filter((s) => s !== frame.seq));
      expect(
        got.every((r) => sameRecord(r, inputs[r.seq - 1]!)),
        ctx,
      ).toBe(true);
      // Reads that start inside or right before the damage skip it too.
      expect(
        (await wal.read(frame.seq, 2, 1 << 20)).map((r) => r.seq),
        ctx,
      ).not.toContain(frame.seq);
      expect(wal.stats().nextSeq, ctx).toBe(inputs.length + 1);
      expect(await wal.append([testRecord(1)]), ctx).toEqual({ firstSeq: 301, lastSeq: 301 });
      await wal.close();
      await rm(dir, { recursive: true });
    }
  });

  it("keeps the incarnation across reopen and refuses segments without one", async () => {
    const dir = await trialDir();
    const incarnation = (await readFile(join(dir, "incarnation"), "latin1")).trim();
    const wal = await openIngressWal(smallOptions(dir));
    expect(wal.incarnation).toBe(incarnation);
    await wal.close();
    await rm(join(dir, "incarnation"));
    await expect(openIngressWal(smallOptions(dir))).rejects.toMatchObject({
      code: "WAL_INCARNATION_INVALID",
    });
  });
});

describe("scanSegment decision table", () => {
  const recs = Array.from({ length: 6 }, (_, i) => testRecord(i, 60));
  const frames = (seqStart: number, rs: WalRecordInput[]) => encodeWalFrames(rs, seqStart);

  it("R1: accepts a clean segment", () => {
    const scan = scanSegment(frames(10, recs), 10, undefined);
    expect(scan).toMatchObject({ lastSeq: 15, frames: 6, corruptFrames: 0, tornBytes: 0 });
  });

  it("R2/R3: rejects a frame-shaped run in a payload whose seq the skipped bytes cannot explain", () => {
    const fake = frames(1000, [testRecord(99, 10)]);
    const withFake = [...recs];
    withFake[2] = { ...recs[2]!, payload: Buffer.concat([Buffer.alloc(10), fake]) };
    const buf = frames(1, withFake);
    const all = framesOf(buf);
    buf[all[2]!.start + 16] = buf[all[2]!.start + 16]! ^ 0xff; // break frame 3's CRC
    const scan = scanSegment(buf, 1, undefined);
    expect(scan).toMatchObject({ lastSeq: 6, frames: 5, corruptFrames: 1, tornBytes: 0 });
    expect(scan.skips).toEqual([{ start: all[2]!.start, end: all[3]!.start }]);
  });

  it("R2: skips a valid frame with a stale seq", () => {
    const buf = Buffer.concat([
      frames(1, recs.slice(0, 3)),
      frames(2, recs.slice(1, 2)),
      frames(4, recs.slice(3)),
    ]);
    const scan = scanSegment(buf, 1, undefined);
    expect(scan).toMatchObject({ lastSeq: 6, frames: 6, corruptFrames: 1 });
  });

  it("R4 vs R5: a bad tail is torn in the last segment, corrupt in a sealed one", () => {
    const buf = frames(1, recs);
    const cut = buf.subarray(0, buf.length - 5);
    expect(scanSegment(cut, 1, undefined)).toMatchObject({
      lastSeq: 5,
      tornBytes: framesOf(buf)[5]!.end - 5 - framesOf(buf)[5]!.start,
      corruptFrames: 0,
    });
    expect(scanSegment(cut, 1, 7)).toMatchObject({
      lastSeq: 5,
      tornBytes: 0,
      corruptFrames: 1,
      validEnd: cut.length,
    });
  });
});
