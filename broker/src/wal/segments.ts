// One WAL segment file `<20-digit first seq>.wal` and how records are read
// back from it. A segment knows its durable size (bytes covered by completed
// fdatasyncs), a sparse seq→offset index, byte ranges that recovery found
// corrupt, and a read cursor so the dispatcher's sequential reads resume where
// the last one stopped instead of rescanning.

import type { WalRecord } from "../core/records.ts";
import {
  checkWalFrame,
  decodeCheckedWalFrame,
  walFrameBytes,
  walFrameHeaderBytes,
  walFrameSeq,
} from "../core/wal-codec.ts";
import { type FileHandleIo, type FileIo, readFully } from "../storage/file-io.ts";
import { WalError } from "./errors.ts";

export const walSegmentSuffix = ".wal";
const segmentNameDigits = 20;
const segmentNamePattern = /^(\d{20})\.wal$/;

/** One sparse index entry per this many bytes: bounds the scan from an entry to ~64 KiB. */
export const walIndexIntervalBytes = 64 * 1024;
/** Disk reads fetch this much at a time (more only for a single larger frame). */
export const walReadChunkBytes = 256 * 1024;

export function segmentFileName(firstSeq: number): string {
  return String(firstSeq).padStart(segmentNameDigits, "0") + walSegmentSuffix;
}

export function parseSegmentFileName(name: string): number | undefined {
  const m = segmentNamePattern.exec(name);
  if (m === null) return undefined;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) && seq >= 1 ? seq : undefined;
}

/** Bytes [start, end) that recovery found corrupt; reads jump over them. */
export interface SkipRange {
  start: number;
  end: number;
}

/** A shared byte/record budget for one read() call across segments and the tail cache. */
export interface ReadBudget {
  maxRecords: number;
  maxBytes: number;
  bytes: number;
  out: WalRecord[];
}

/** True when the next frame of `frameBytes` may not be added (the first record always is). */
export function budgetFull(b: ReadBudget, frameBytes: number): boolean {
  if (b.out.length >= b.maxRecords) return true;
  return b.out.length > 0 && b.bytes + frameBytes > b.maxBytes;
}

export class Segment {
  readonly firstSeq: number;
  readonly path: string;
  /** Bytes that are durable and whole frames (or recovered skip ranges). Reads stop here. */
  size: number;
  /** Highest valid seq in this segment; firstSeq - 1 when it holds none. */
  lastSeq: number;
  readonly skips: SkipRange[];
  #indexSeqs: number[] = [];
  #indexOffsets: number[] = [];
  #cursorSeq = 0;
  #cursorOffset = 0;
  handle: FileHandleIo | undefined;
  /** Reads currently using `handle`; a deleted segment closes it when this drops to 0. */
  readers = 0;
  deleted = false;

  constructor(firstSeq: number, path: string, size: number, lastSeq: number, skips: SkipRange[]) {
    this.firstSeq = firstSeq;
    this.path = path;
    this.size = size;
    this.lastSeq = lastSeq;
    this.skips = skips;
  }

  /** Records that a frame with `seq` starts at `offset`; keeps one entry per index interval. */
  noteFrame(seq: number, offset: number, force = false): void {
    const n = this.#indexOffsets.length;
    if (!force && n > 0 && offset - this.#indexOffsets[n - 1]! < walIndexIntervalBytes) return;
    if (n > 0 && seq <= this.#indexSeqs[n - 1]!) return;
    this.#indexSeqs.push(seq);
    this.#indexOffsets.push(offset);
  }

  /** The best known frame boundary at or before `fromSeq` (index entry or the read cursor). */
  startOffset(fromSeq: number): number {
    let lo = 0;
    let hi = this.#indexSeqs.length - 1;
    let best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#indexSeqs[mid]! <= fromSeq) {
        best = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    const indexSeq = best >= 0 ? this.#indexSeqs[best]! : 0;
    const indexOffset = best >= 0 ? this.#indexOffsets[best]! : 0;
    if (this.#cursorSeq !== 0 && this.#cursorSeq <= fromSeq && this.#cursorSeq >= indexSeq) {
      return this.#cursorOffset;
    }
    return indexOffset;
  }

  setCursor(seq: number, offset: number): void {
    this.#cursorSeq = seq;
    this.#cursorOffset = offset;
  }

  skipAt(offset: number): SkipRange | undefined {
    for (const s of this.skips) if (s.start === offset) return s;
    return undefined;
  }
}

function corrupt(seg: Segment, offset: number, reason: string): WalError {
  return new WalError(
    "WAL_CORRUPT",
    `${seg.path}: frame at ${offset} failed verification on read (${reason})`,
  );
}

/**
 * Appends records with seq >= fromSeq from `seg` to the budget, reading the
 * file in chunks from the best known start. Every returned frame is CRC- and
 * shape-checked again (the check after read). Returns true when the budget
 * filled up (the caller stops), false when the segment was exhausted.
 */
export async function readSegment(
  io: FileIo,
  seg: Segment,
  fromSeq: number,
  budget: ReadBudget,
): Promise<boolean> {
  if (seg.deleted || fromSeq > seg.lastSeq) return false;
  seg.readers++;
  try {
    if (seg.handle === undefined) {
      const h = await io.open(seg.path, "read");
      // Two reads may race to open a sealed segment: keep one handle, close the other.
      if (seg.handle === undefined) seg.handle = h;
      else await h.close();
    }
    return await readSegmentFrames(seg, seg.handle, fromSeq, budget);
  } finally {
    seg.readers--;
    if (seg.deleted && seg.readers === 0) await closeSegment(seg);
  }
}

async function readSegmentFrames(
  seg: Segment,
  h: FileHandleIo,
  fromSeq: number,
  budget: ReadBudget,
): Promise<boolean> {
  // Snapshot: size and lastSeq advance together when a group becomes durable.
  const end = seg.size;
  const endSeq = seg.lastSeq + 1;
  let pos = seg.startOffset(fromSeq);
  let chunkBytes = walReadChunkBytes;
  while (pos < end) {
    const len = Math.min(chunkBytes, end - pos);
    const buf = Buffer.allocUnsafe(len);
    if ((await readFully(h, buf, len, pos)) !== len)
      throw corrupt(seg, pos, "file shorter than its durable size");
    chunkBytes = walReadChunkBytes;
    let p = 0;
    while (p < len) {
      const skip = seg.skipAt(pos + p);
      if (skip !== undefined) {
        p = skip.end - pos;
        continue;
      }
      if (len - p < walFrameHeaderBytes) {
        if (pos + p + walFrameHeaderBytes > end)
          throw corrupt(seg, pos + p, "partial header at the durable end");
        break;
      }
      const frameBytes = walFrameBytes(buf, p);
      if (pos + p + frameBytes > end) throw corrupt(seg, pos + p, "frame runs past the durable end");
      if (p + frameBytes > len) {
        if (p === 0) chunkBytes = frameBytes;
        break;
      }
      const seq = walFrameSeq(buf, p) ?? 0;
      if (seq >= fromSeq) {
        if (budgetFull(budget, frameBytes)) {
          seg.setCursor(seq, pos + p);
          return true;
        }
        const check = checkWalFrame(buf, p, p + frameBytes);
        if (check.kind !== "ok")
          throw corrupt(seg, pos + p, check.kind === "bad" ? check.reason : "incomplete");
        budget.out.push(decodeCheckedWalFrame(buf, p));
        budget.bytes += frameBytes;
      }
      p += frameBytes;
    }
    pos += p;
  }
  // The next frame written here (active segment) carries endSeq: resume from it.
  seg.setCursor(endSeq, end);
  return false;
}

export async function closeSegment(seg: Segment): Promise<void> {
  const h = seg.handle;
  seg.handle = undefined;
  if (h !== undefined) await h.close();
}
