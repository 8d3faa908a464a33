// Recovery at open: scan every segment, verify every frame, truncate a torn
// tail, and map out corruption so it is never served.
//
// Decision table for the frame at the scan position `pos` (expected = the
// seq that must come next; it starts at the segment's name):
//
//   R1 whole frame, CRC and shape ok, seq == expected
//        → accept; expected += 1.
//   R2 anything else (bad magic/CRC/shape, cut short by end of file, or a
//      valid frame whose seq != expected) → a corrupt region starts at pos.
//      Resync: the first later offset m holding a whole valid frame with
//        expected <= seq <= expected + floor((m - pos) / walMinFrameBytes)
//      (the skipped bytes must be able to hold the missing frames; this keeps
//      a frame-shaped byte run inside a payload, or a stale frame, from being
//      taken as a continuation).
//   R3 resync found m → skip [pos, m), count max(1, seq - expected) corrupt
//      frames, accept the frame at m, continue.
//   R4 no m, last segment → torn tail: truncate the file at pos and fsync it.
//      Seqs named by plausible frame headers in the torn bytes are never
//      reused (nextSeq moves past them) in case one was ever served.
//   R5 no m, sealed segment → corrupt tail (sealed segments were whole when
//      rolled): skip [pos, end), count max(1, nextSegment.firstSeq - expected),
//      keep the bytes for inspection.
//
// A bad frame at the very end of the last segment is indistinguishable from
// a torn write and is truncated (R4); anywhere else corruption is skipped,
// logged and counted in stats().corruptFrames.

import { join } from "node:path";
import { checkWalFrame, findWalMagic, walFrameSeq, walMinFrameBytes } from "../core/wal-codec.ts";
import type { FileIo } from "../storage/file-io.ts";
import type { WalLogger } from "./errors.ts";
import { Segment, type SkipRange, segmentFileName } from "./segments.ts";

export interface CorruptRegion {
  start: number;
  end: number;
  reason: string;
  /** Frames counted for this region. */
  frames: number;
}

export interface SegmentScan {
  /** Highest accepted seq; firstSeq - 1 when none. */
  lastSeq: number;
  /** End of the last accepted frame or skip range (the file's valid length). */
  validEnd: number;
  /** Number of accepted frames. */
  frames: number;
  skips: SkipRange[];
  corrupt: CorruptRegion[];
  corruptFrames: number;
  /** Bytes after validEnd that R4 will truncate (0 when none). */
  tornBytes: number;
  /** One past the highest plausible seq named in the torn bytes; 0 when none. */
  tornSeqFloor: number;
}

function resync(buf: Buffer, regionStart: number, from: number, expected: number) {
  for (let m = findWalMagic(buf, from, buf.length); m >= 0; m = findWalMagic(buf, m + 1, buf.length)) {
    const c = checkWalFrame(buf, m, buf.length);
    if (c.kind !== "ok") continue;
    const maxMissing = Math.floor((m - regionStart) / walMinFrameBytes);
    if (c.seq >= expected && c.seq - expected <= maxMissing)
      return { at: m, seq: c.seq, frameBytes: c.frameBytes };
  }
  return undefined;
}

function tornSeqFloor(buf: Buffer, regionStart: number, expected: number): number {
  const maxMissing = Math.ceil((buf.length - regionStart) / walMinFrameBytes);
  let floor = 0;
  for (let m = findWalMagic(buf, regionStart, buf.length); m >= 0; m = findWalMagic(buf, m + 1, buf.length)) {
    if (m + 16 > buf.length) break;
    const seq = walFrameSeq(buf, m);
    if (seq !== undefined && seq >= expected && seq - expected <= maxMissing)
      floor = Math.max(floor, seq + 1);
  }
  return floor;
}

/** Told about each accepted frame; `afterSkip` marks the first frame after a corrupt range. */
export type FrameSink = (seq: number, offset: number, afterSkip: boolean) => void;

/** Pure scan of one segment's bytes. `nextFirstSeq` is undefined for the last segment. */
export function scanSegment(
  buf: Buffer,
  firstSeq: number,
  nextFirstSeq: number | undefined,
  onFrame: FrameSink = () => {},
): SegmentScan {
  const scan: SegmentScan = {
    lastSeq: firstSeq - 1,
    validEnd: 0,
    frames: 0,
    skips: [],
    corrupt: [],
    corruptFrames: 0,
    tornBytes: 0,
    tornSeqFloor: 0,
  };
  let expected = firstSeq;
  let pos = 0;
  while (pos < buf.length) {
    const c = checkWalFrame(buf, pos, buf.length);
    if (c.kind === "ok" && c.seq === expected) {
      onFrame(c.seq, pos, false); // R1
      scan.frames++;
      expected++;
      pos += c.frameBytes;
      continue;
    }
    const reason =
      c.kind === "ok" ? `seq ${c.seq}, expected ${expected}` : c.kind === "bad" ? c.reason : "cut short";
    const found = resync(buf, pos, pos + 1, expected);
    if (found !== undefined) {
      const frames = Math.max(1, found.seq - expected); // R3
      scan.skips.push({ start: pos, end: found.at });
      scan.corrupt.push({ start: pos, end: found.at, reason, frames });
      scan.corruptFrames += frames;
      onFrame(found.seq, found.at, true);
      scan.frames++;
      expected = found.seq + 1;
      pos = found.at + found.frameBytes;
      continue;
    }
    if (nextFirstSeq === undefined) {
      scan.tornBytes = buf.length - pos; // R4
      scan.tornSeqFloor = tornSeqFloor(buf, pos, expected);
      break;
    }
    const frames = Math.max(1, nextFirstSeq - expected); // R5
    scan.skips.push({ start: pos, end: buf.length });
    scan.corrupt.push({ start: pos, end: buf.length, reason, frames });
    scan.corruptFrames += frames;
    pos = buf.length;
  }
  scan.validEnd = buf.length - scan.tornBytes;
  scan.lastSeq = expected - 1;
  return scan;
}

export interface RecoveredWal {
  segments: Segment[];
  /** max(highest valid seq + 1, last segment's first seq, torn-header floor). */
  nextSeq: number;
  corruptFrames: number;
}

/**
 * Scans the segments (sorted by first seq) and builds their in-memory state.
 * Fsync order: a torn tail is truncated and the file fsynced before the WAL
 * accepts appends (crash during truncation → the next open truncates again).
 */
export async function recoverSegments(
  io: FileIo,
  dir: string,
  firstSeqs: readonly number[],
  log: WalLogger,
): Promise<RecoveredWal> {
  const segments: Segment[] = [];
  let nextSeq = 1;
  let corruptFrames = 0;
  for (let i = 0; i < firstSeqs.length; i++) {
    const firstSeq = firstSeqs[i]!;
    const nextFirstSeq = firstSeqs[i + 1];
    const path = join(dir, segmentFileName(firstSeq));
    const buf = (await io.readFile(path)) ?? Buffer.alloc(0);
    const seg = new Segment(firstSeq, path, 0, firstSeq - 1, []);
    const scan = scanSegment(buf, firstSeq, nextFirstSeq, (seq, offset, afterSkip) =>
      seg.noteFrame(seq, offset, afterSkip),
    );
    seg.size = scan.validEnd;
    seg.lastSeq = scan.lastSeq;
    seg.skips.push(...scan.skips);
    for (const r of scan.corrupt) {
      log.error({ path, ...r }, "ingress WAL corruption: skipping frames, they will never be served");
    }
    if (scan.tornBytes > 0) {
      log.warn({ path, validEnd: scan.validEnd, tornBytes: scan.tornBytes }, "truncating torn WAL tail");
      const h = await io.open(path, "readWrite");
      try {
        await h.truncate(scan.validEnd);
        await h.sync();
      } finally {
        await h.close();
      }
    }
    const prev = segments[segments.length - 1];
    if (prev !== undefined && firstSeq !== prev.lastSeq + 1) {
      log.warn({ path, firstSeq, previousLastSeq: prev.lastSeq }, "WAL segments are not seq-contiguous");
    }
    segments.push(seg);
    corruptFrames += scan.corruptFrames;
    nextSeq = Math.max(nextSeq, scan.lastSeq + 1, firstSeq, scan.tornSeqFloor);
  }
  return { segments, nextSeq, corruptFrames };
}
