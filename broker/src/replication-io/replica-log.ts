// A follower's copy of one partition log (ADR 0007): raw frames fetched
// from the leader, appended byte for byte in the partition-log file format
// (`<20-digit base offset>.log` segments in a pNNNNN directory), fsynced and
// read back before the end moves. The directory opens as an ordinary
// partition log (openPartitionLog) once wired in. Not yet used by live
// topics: see docs/replication.md, "What is built".
//
// Crash safety:
// - append: bytes are written at the active segment's end, fdatasync'd and
//   read back; a crash before the fsync leaves a torn tail, which open()
//   cuts at the last whole frame with a valid CRC (nothing past the durable
//   end was ever reported, so nothing reported is lost).
// - truncateTo: later segments are unlinked newest first (dir fsynced), then
//   the segment holding the cut is ftruncated and fdatasync'd. A crash at
//   any step leaves a contiguous prefix that is at least as long as the
//   target; the fetcher re-runs the truncation protocol at every start.

import { mkdir, open, readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import {
  frameBytes,
  frameHeaderBytes,
  parseFrameHeader,
  scanFrameIds,
  verifyFrameCrc,
} from "../core/log-codec.ts";
import { readDedupFloor, writeDedupFloor } from "../log/dedup-floor.ts";
import { nodeLogIo } from "../log/log-io.ts";
import { parseSegmentFileName, segmentFileName } from "../log/segment.ts";
import { fsyncDir } from "./atomic-file.ts";

export interface ReplicaLogOptions {
  /** The partition directory (pNNNNN). */
  dir: string;
  /** A new segment starts once the active one holds at least this many bytes. */
  segmentBytes: number;
  maxFrameBytes: number;
}

interface FrameRef {
  baseOffset: number;
  count: number;
  position: number;
  size: number;
}

interface ReplicaSegment {
  base: number;
  path: string;
  bytes: number;
  frames: FrameRef[];
}

export interface FrameScan {
  frames: FrameRef[];
  /** Bytes covered by whole, CRC-valid, contiguous frames. */
  validBytes: number;
  /** Why the scan stopped before the end of `buf` (undefined: it did not). */
  stop?: string;
}

/** Whole frames of `buf` with valid CRCs whose offsets run on from `fromOffset`. */
export function scanFrames(buf: Buffer, fromOffset: number, maxFrameBytes: number): FrameScan {
  const frames: FrameRef[] = [];
  let pos = 0;
  let next = fromOffset;
  while (pos < buf.length) {
    if (buf.length - pos < frameHeaderBytes) return { frames, validBytes: pos, stop: "partial frame header" };
    const parsed = parseFrameHeader(buf, pos, maxFrameBytes);
    if (!parsed.ok) return { frames, validBytes: pos, stop: `bad frame header (${parsed.problem})` };
    const h = parsed.header;
    const size = frameBytes(h);
    if (buf.length - pos < size) return { frames, validBytes: pos, stop: "partial frame" };
    if (!verifyFrameCrc(buf, pos, h))
      return { frames, validBytes: pos, stop: `CRC mismatch at offset ${h.baseOffset}` };
    if (h.baseOffset !== next)
      return { frames, validBytes: pos, stop: `frame at offset ${h.baseOffset} where ${next} was expected` };
    frames.push({ baseOffset: h.baseOffset, count: h.count, position: pos, size });
    next = h.baseOffset + h.count;
    pos += size;
  }
  return { frames, validBytes: pos };
}

async function readWhole(path: string): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

export interface ReplicaLogRecovery {
  segments: number;
  frames: number;
  /** Bytes of a torn tail cut at open (a crash mid-append). */
  cutBytes: number;
}

export class ReplicaLog {
  readonly #o: ReplicaLogOptions;
  readonly #segments: ReplicaSegment[];
  readonly recovery: ReplicaLogRecovery;

  private constructor(o: ReplicaLogOptions, segments: ReplicaSegment[], recovery: ReplicaLogRecovery) {
    this.#o = o;
    this.#segments = segments;
    this.recovery = recovery;
  }

  /**
   * Opens (creating when empty, at `startOffset`) and recovers the copy.
   * A damaged frame in a sealed segment is refused (it was fsynced and
   * verified once: that is disk corruption, not a crash); a torn tail of the
   * active segment is cut.
   */
  static async open(o: ReplicaLogOptions, startOffset = 0): Promise<ReplicaLog> {
    await mkdir(o.dir, { recursive: true });
    const bases = (await readdir(o.dir))
      .map(parseSegmentFileName)
      .filter((b): b is number => b !== null)
      .sort((a, b) => a - b);
    const recovery: ReplicaLogRecovery = { segments: bases.length, frames: 0, cutBytes: 0 };
    if (bases.length === 0) {
      const path = join(o.dir, segmentFileName(startOffset));
      await (await open(path, "a")).close();
      await fsyncDir(o.dir);
      return new ReplicaLog(o, [{ base: startOffset, path, bytes: 0, frames: [] }], recovery);
    }
    const segments: ReplicaSegment[] = [];
    for (const [i, base] of bases.entries()) {
      const path = join(o.dir, segmentFileName(base));
      const prev = segments[segments.length - 1];
      const expected = prev === undefined ? base : endOf(prev);
      if (base !== expected)
        throw new Error(`${path}: segment starts at ${base}, the log ends at ${expected}`);
      const buf = await readWhole(path);
      const scan = scanFrames(buf, base, o.maxFrameBytes);
      const last = i === bases.length - 1;
      if (scan.stop !== undefined) {
        if (!last) throw new Error(`${path}: ${scan.stop} in a sealed segment`);
        // A torn append: never fsynced, so never reported. Cut it.
        const fh = await open(path, "r+");
        try {
          await fh.truncate(scan.validBytes);
          await fh.datasync();
        } finally {
          await fh.close();
        }
        recovery.cutBytes += buf.length - scan.validBytes;
      }
      recovery.frames += scan.frames.length;
      segments.push({ base, path, bytes: scan.validBytes, frames: scan.frames });
    }
    return new ReplicaLog(o, segments, recovery);
  }

  get startOffset(): number {
    return this.#segments[0]!.base;
  }

  /** The next offset to fetch: everything below it is durable and verified here. */
  get endOffset(): number {
    return endOf(this.#segments[this.#segments.length - 1]!);
  }

  /** Frame boundaries, for tests and the byte comparison. */
  segmentFiles(): Array<{ base: number; path: string; bytes: number }> {
    return this.#segments.map((s) => ({ base: s.base, path: s.path, bytes: s.bytes }));
  }

  /**
   * Appends frames that must start at endOffset, run contiguously and pass
   * their CRC (checked on arrival, before any byte is written); fsyncs, reads
   * the bytes back and compares, then moves the end. Returns the new end.
   */
  async append(frames: Buffer): Promise<number> {
    if (frames.length === 0) return this.endOffset;
    const scan = scanFrames(frames, this.endOffset, this.#o.maxFrameBytes);
    if (scan.stop !== undefined) throw new Error(`replica append refused: ${scan.stop}`);
    let seg = this.#segments[this.#segments.length - 1]!;
    if (seg.bytes >= this.#o.segmentBytes) seg = await this.#roll();
    const fh = await open(seg.path, "r+");
    try {
      await fh.write(frames, 0, frames.length, seg.bytes);
      await fh.datasync();
      const back = Buffer.allocUnsafe(frames.length);
      const { bytesRead } = await fh.read(back, 0, frames.length, seg.bytes);
      if (bytesRead !== frames.length || !back.equals(frames)) {
        await fh.truncate(seg.bytes);
        await fh.datasync();
        throw new Error(`replica append to ${seg.path}: read-back differs from what was written`);
      }
    } finally {
      await fh.close();
    }
    for (const f of scan.frames) seg.frames.push({ ...f, position: seg.bytes + f.position });
    seg.bytes += frames.length;
    return this.endOffset;
  }

  async #roll(): Promise<ReplicaSegment> {
    const base = this.endOffset;
    const path = join(this.#o.dir, segmentFileName(base));
    await (await open(path, "a")).close();
    // Crash point: before this fsync the empty segment may vanish; open() then ends at the previous one.
    await fsyncDir(this.#o.dir);
    const seg = { base, path, bytes: 0, frames: [] };
    this.#segments.push(seg);
    return seg;
  }

  /**
   * Cuts the log to end at `offset`, a frame boundary in
   * [startOffset, endOffset]. The caller has checked that this is above
   * everything acknowledged (replica.ts planTruncation refuses otherwise).
   */
  async truncateTo(offset: number): Promise<void> {
    if (offset > this.endOffset || offset < this.startOffset)
      throw new RangeError(`truncateTo(${offset}) outside [${this.startOffset}, ${this.endOffset}]`);
    if (offset === this.endOffset) return;
    // Checked before anything is deleted: a cut inside a frame changes nothing.
    const holder = [...this.#segments].reverse().find((s) => s.base <= offset)!;
    if (offset !== holder.base && !holder.frames.some((f) => f.baseOffset === offset))
      throw new RangeError(`truncateTo(${offset}): not a frame boundary of ${holder.path}`);
    // Newest first, so every crash point leaves a contiguous prefix.
    while (this.#segments.length > 1 && this.#segments[this.#segments.length - 1]!.base >= offset) {
      const seg = this.#segments[this.#segments.length - 1]!;
      await unlink(seg.path);
      await fsyncDir(this.#o.dir);
      this.#segments.pop();
    }
    const seg = this.#segments[this.#segments.length - 1]!;
    const keep = seg.frames.findIndex((f) => f.baseOffset >= offset);
    if (keep < 0) return;
    const cut = seg.frames[keep]!;
    if (cut.baseOffset !== offset)
      throw new RangeError(
        `truncateTo(${offset}): not a frame boundary (a frame starts at ${cut.baseOffset})`,
      );
    const fh = await open(seg.path, "r+");
    try {
      await fh.truncate(cut.position);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    seg.frames.length = keep;
    seg.bytes = cut.position;
  }

  /**
   * Retention on a follower: drops the sealed segments that end at or below
   * `offset` (the leader's oldest offset; its retention already deleted
   * them there), never the active one. The dedup floor is raised first with
   * the highest (incarnation, seq) they hold, so a copy that becomes leader
   * still drops a re-sent record whose segment is gone (log/dedup-floor.ts).
   * Oldest first; a crash part-way leaves a suffix, and the next call
   * finishes. Returns the segments deleted.
   */
  async deleteBelow(offset: number): Promise<number> {
    const doomed: ReplicaSegment[] = [];
    for (let i = 0; i < this.#segments.length - 1; i++) {
      const seg = this.#segments[i]!;
      if (endOf(seg) > offset) break;
      doomed.push(seg);
    }
    if (doomed.length === 0) return 0;
    // Before the first unlink: the floor plus what remains cover every seq.
    await this.#raiseDedupFloor(doomed);
    for (const seg of doomed) {
      await unlink(seg.path);
      this.#segments.shift();
    }
    await fsyncDir(this.#o.dir);
    return doomed.length;
  }

  /**
   * Drops the whole copy and restarts it empty at `offset`: a replica whose
   * end is below the leader's oldest offset (retention deleted what it
   * lacks) can only start over there. Segments go newest first; a crash
   * part-way leaves a shorter prefix, which the next fetch finds out of
   * range again.
   */
  async resetTo(offset: number): Promise<void> {
    await this.#raiseDedupFloor(this.#segments);
    while (this.#segments.length > 0) {
      const seg = this.#segments[this.#segments.length - 1]!;
      await unlink(seg.path);
      this.#segments.pop();
    }
    await fsyncDir(this.#o.dir);
    const path = join(this.#o.dir, segmentFileName(offset));
    await (await open(path, "a")).close();
    await fsyncDir(this.#o.dir);
    this.#segments.push({ base: offset, path, bytes: 0, frames: [] });
  }

  /** Raises the dedup floor with the highest (incarnation, seq) of `segs`' frames (written durably when it moves). */
  async #raiseDedupFloor(segs: readonly ReplicaSegment[]): Promise<void> {
    const floor = await readDedupFloor(nodeLogIo, this.#o.dir);
    let raised = false;
    for (const seg of segs) {
      if (seg.frames.length === 0) continue;
      const buf = await readWhole(seg.path);
      for (const f of seg.frames) {
        const parsed = parseFrameHeader(buf, f.position, this.#o.maxFrameBytes);
        const ids = parsed.ok ? scanFrameIds(buf, f.position, parsed.header) : null;
        if (ids === null)
          throw new Error(`${seg.path}: frame at offset ${f.baseOffset} cannot be read for the dedup floor`);
        for (const [inc, seq] of ids.maxSeq) {
          if (seq > (floor.get(inc) ?? -1)) {
            floor.set(inc, seq);
            raised = true;
          }
        }
      }
    }
    if (raised) await writeDedupFloor(nodeLogIo, this.#o.dir, floor);
  }
}

function endOf(s: ReplicaSegment): number {
  const last = s.frames[s.frames.length - 1];
  return last === undefined ? s.base : last.baseOffset + last.count;
}
