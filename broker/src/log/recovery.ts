// Segment recovery at open: walk every frame, CRC-check it, rebuild the
// sparse index and the (incarnation → highest seq) dedup map, and classify
// anything that is not a valid frame.
//
// Decision table (`recoveryCases`; a test walks each row):
//   valid-frame   header sane, CRC ok, records well formed, base offset >=
//                 the expected next offset → accepted, served, indexed.
//   gap           invalid bytes followed by a valid frame in the same segment
//                 → the range is skipped (a gap in offsets), counted, never
//                 served; the frame after it is indexed so reads jump over it.
//   torn-tail     invalid bytes to the end of the ACTIVE segment → truncated
//                 (ftruncate + fdatasync). Only the last, unacknowledged
//                 commit can be torn: every acknowledged frame was fsynced
//                 and read back before its commit resolved.
//   corrupt-tail  invalid bytes to the end of a SEALED segment → left in place
//                 (evidence), counted, never served.
//
// Why every valid frame may be exposed (unlike narad-go, which caps
// visibility at the `hwm` file and re-commits the "hidden tail" from the
// WAL): a whole, CRC-valid frame after a crash holds exactly the bytes we
// wrote. Either its commit was acknowledged (then it must be visible), or the
// process died between write and acknowledgement; then the ingress WAL has
// not checkpointed past those records (its checkpoint only advances after
// commitDurable resolved) and will re-dispatch them, and the dedup map we
// rebuild here from the same frames drops the re-commit. So exposing them
// yields exactly-once, and hiding them would only delay them.
//
// Known limit: a payload that itself contains a valid narad frame could be
// mistaken for "the next valid frame" when searching past corruption; it
// must also carry an offset >= the expected one, so this needs a crafted
// payload and corruption right before it.

import {
  frameBytes,
  frameHeaderBytes,
  frameMagic,
  parseFrameHeader,
  scanFrameIds,
  verifyFrameCrc,
} from "../core/log-codec.ts";
import type { ProducerSequences } from "../core/producer-sequence.ts";
import type { RecentOffsets } from "./recent-offsets.ts";
import { FrameWindow, type Segment } from "./segment.ts";

/** Read size while scanning segments at open (sequential, so larger is cheaper). */
const recoveryChunkBytes = 1024 * 1024;

export const recoveryCases = ["valid-frame", "gap", "torn-tail", "corrupt-tail"] as const;
export type RecoveryCase = (typeof recoveryCases)[number];

export interface SegmentRecovery {
  frames: number;
  /** Corrupt ranges skipped inside the segment (each counted once). */
  gaps: number;
  /** Bytes removed from the end of the active segment. */
  truncatedBytes: number;
  /** Bytes after the last valid frame of a sealed segment, left in place. */
  corruptTailBytes: number;
}

interface FoundFrame {
  /** Start of the valid frame found after corruption. */
  pos: number;
  /** Position just after it. */
  end: number;
}

const magicBytes = Buffer.from([frameMagic >> 8, frameMagic & 0xff]);

/**
 * Tries to accept the frame at `pos`: header, CRC, record shape and offset
 * order. On success updates the segment's index/end/time and `dedup`.
 */
async function acceptFrame(
  seg: Segment,
  win: FrameWindow,
  pos: number,
  maxFrameBytes: number,
  dedup: Map<string, number>,
  afterGap: boolean,
  producers: ProducerSequences | undefined,
  recent: RecentOffsets | undefined,
): Promise<number> {
  if (!(await win.ensure(pos, frameHeaderBytes))) return -1;
  const parsed = parseFrameHeader(win.buf, pos - win.start, maxFrameBytes);
  if (!parsed.ok) return -1;
  const h = parsed.header;
  if (h.baseOffset < seg.endOffset) return -1;
  const size = frameBytes(h);
  if (!(await win.ensure(pos, size))) return -1;
  const at = pos - win.start;
  if (!verifyFrameCrc(win.buf, at, h)) return -1;
  const ids = scanFrameIds(win.buf, at, h, recent !== undefined);
  if (ids === null) return -1;
  if (recent !== undefined) for (const r of ids.seqs ?? []) recent.set(r.incarnation, r.seq, r.offset);
  for (const [inc, seq] of ids.maxSeq) {
    const prev = dedup.get(inc);
    if (prev === undefined || seq > prev) dedup.set(inc, seq);
  }
  if (producers !== undefined)
    for (const r of ids.producerRecords) producers.commit(r.stamp, r.offset, r.fingerprint, -1, r.commitMs);
  seg.index.offer(h.baseOffset, pos, afterGap || seg.index.size === 0);
  seg.endOffset = h.baseOffset + h.count;
  if (ids.lastCommitMs > seg.newestCommitMs) seg.newestCommitMs = ids.lastCommitMs;
  return pos + size;
}

/**
 * First position >= from holding a valid frame (which is accepted), or null.
 * Scans for the magic bytes, then fully validates each candidate.
 */
async function findNextFrame(
  seg: Segment,
  win: FrameWindow,
  from: number,
  maxFrameBytes: number,
  dedup: Map<string, number>,
  producers: ProducerSequences | undefined,
  recent: RecentOffsets | undefined,
): Promise<FoundFrame | null> {
  let pos = from;
  while (pos + frameHeaderBytes <= win.limit) {
    if (!(await win.ensure(pos, Math.min(recoveryChunkBytes, win.limit - pos)))) return null;
    const hit = win.buf.indexOf(magicBytes, pos - win.start);
    if (hit < 0) {
      // Resume at the window's last byte: a magic may straddle the edge.
      // Progress is certain: the window holds at least a header past pos.
      pos = win.start + win.buf.length - 1;
      continue;
    }
    const candidate = win.start + hit;
    // acceptFrame mutates state only on success, so probing is safe.
    const end = await acceptFrame(seg, win, candidate, maxFrameBytes, dedup, true, producers, recent);
    if (end >= 0) return { pos: candidate, end };
    pos = candidate + 1;
  }
  return null;
}

/**
 * Scans `seg` (whose file is `fileSize` bytes), setting verifiedEnd, index,
 * gaps, endOffset and newestCommitMs, and merging its ids into `dedup`
 * (and each record's offset into `recent`, so a re-sent record is answered
 * with its offset after a restart or on a newly elected leader).
 * The active segment's torn tail is truncated and fdatasync'd before return.
 */
export async function recoverSegment(
  seg: Segment,
  fileSize: number,
  active: boolean,
  maxFrameBytes: number,
  dedup: Map<string, number>,
  producers?: ProducerSequences,
  recent?: RecentOffsets,
): Promise<SegmentRecovery> {
  const result: SegmentRecovery = { frames: 0, gaps: 0, truncatedBytes: 0, corruptTailBytes: 0 };
  const win = new FrameWindow(seg.writer, fileSize, recoveryChunkBytes);
  let pos = 0;
  while (pos < fileSize) {
    const next = await acceptFrame(seg, win, pos, maxFrameBytes, dedup, false, producers, recent);
    if (next >= 0) {
      result.frames++;
      pos = next;
      continue;
    }
    const found = await findNextFrame(seg, win, pos + 1, maxFrameBytes, dedup, producers, recent);
    if (found !== null) {
      // Case gap: findNextFrame already accepted the frame at found.pos.
      seg.gaps.set(pos, found.pos);
      result.gaps++;
      result.frames++;
      pos = found.end;
      continue;
    }
    if (active) {
      // Case torn-tail. Crash point: dying after truncate but before
      // fdatasync just repeats this truncation at the next open.
      await seg.writer.truncate(pos);
      await seg.writer.datasync();
      result.truncatedBytes = fileSize - pos;
    } else {
      // Case corrupt-tail.
      result.corruptTailBytes = fileSize - pos;
    }
    break;
  }
  seg.verifiedEnd = pos;
  seg.fileBytes = fileSize - result.truncatedBytes;
  return result;
}
