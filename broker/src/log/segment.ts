// One segment file `<20-digit base offset>.log` of a partition log: its
// file handles (the active segment's read-write handle, shared by the
// writer and positional readers; a sealed segment's read handle comes from
// the log store's bounded cache, segment-handles.ts), the verified end
// position, the sparse index, and the corrupt gaps found at recovery. A
// segment never serves bytes at or beyond `verifiedEnd`: the writer only
// advances it after fsync + read-back verification.

import {
  decodeFrameRecords,
  type FrameHeader,
  frameBytes,
  frameHeaderBytes,
  parseFrameHeader,
  verifyFrameCrc,
} from "../core/log-codec.ts";
import type { StoredRecord } from "../core/records.ts";
import type { LogFile } from "./log-io.ts";
import type { SegmentHandles, SegmentLease } from "./segment-handles.ts";
import { SparseIndex } from "./sparse-index.ts";

const segmentNameDigits = 20;
const segmentNamePattern = /^(\d{20})\.log$/;

export function segmentFileName(baseOffset: number): string {
  return `${String(baseOffset).padStart(segmentNameDigits, "0")}.log`;
}

/** Base offset encoded in a segment file name, or null for other files. */
export function parseSegmentFileName(name: string): number | null {
  const m = segmentNamePattern.exec(name);
  if (m === null) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/** A corrupt byte range [from, to) skipped at recovery; `to` is the next valid frame. */
export interface Gap {
  from: number;
  to: number;
}

/**
 * Buffered positional reader over [0, limit) of a file. Each refill is a new
 * Buffer because decoded records keep views into it.
 */
export class FrameWindow {
  buf: Buffer = Buffer.alloc(0);
  start = 0;
  readonly #file: LogFile;
  readonly #limit: number;
  readonly #chunkBytes: number;

  constructor(file: LogFile, limit: number, chunkBytes: number) {
    this.#file = file;
    this.#limit = limit;
    this.#chunkBytes = chunkBytes;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Makes [pos, pos+len) available at buf[pos-start]; false when it passes the limit. */
  async ensure(pos: number, len: number): Promise<boolean> {
    if (pos + len > this.#limit) return false;
    if (pos >= this.start && pos + len <= this.start + this.buf.length) return true;
    const want = Math.min(Math.max(len, this.#chunkBytes), this.#limit - pos);
    const buf = Buffer.allocUnsafe(want);
    const got = await this.#file.read(buf, 0, want, pos);
    this.buf = got === want ? buf : buf.subarray(0, got);
    this.start = pos;
    return got >= len;
  }
}

export interface SegmentReadLimits {
  fromOffset: number;
  /** Exclusive upper bound on offsets served (the HWM). */
  hwm: number;
  maxRecords: number;
  maxBytes: number;
  maxFrameBytes: number;
  chunkBytes: number;
}

export interface RawReadLimits {
  /** Must be the base offset of a frame of this segment (or its end). */
  fromOffset: number;
  hwm: number;
  /** Stop once this many bytes were collected (the first frame is always taken). */
  maxBytes: number;
  maxFrameBytes: number;
  chunkBytes: number;
}

export type RawReadResult =
  /** Frames from fromOffset; "gap": a corrupt range follows the last frame (the run ends there). */
  | { kind: "ok" | "gap"; frames: Buffer[]; bytes: number; nextOffset: number }
  /** fromOffset lies inside a frame, or in a gap: no contiguous run starts there. */
  | { kind: "misaligned" };

/** What a frame walk needs of either read's limits. */
interface FrameWalkLimits {
  /** Frames at or above this offset end the walk. */
  hwm: number;
  maxFrameBytes: number;
  chunkBytes: number;
}

/** One read's decisions during a frame walk (Segment.#walkFrames); every callback is synchronous. */
interface FrameVisitor {
  /** Whether to go on; asked before each frame or gap. */
  more(): boolean;
  /** A corrupt range recovery skipped lies here: true steps over it, false ends the walk. */
  gap(): boolean;
  /** A frame below the HWM: step over it unread, read it whole, or end the walk. */
  header(h: FrameHeader): "skip" | "read" | "stop";
  /** The frame is buf[at, at + frameBytes(h)), CRC-checked, at file position pos: false ends the walk. */
  frame(buf: Buffer, at: number, h: FrameHeader, pos: number): boolean;
}

export class Segment {
  readonly baseOffset: number;
  readonly path: string;
  readonly index: SparseIndex;
  /** Corrupt ranges keyed by their start position. */
  readonly gaps = new Map<number, number>();
  /** Bytes [0, verifiedEnd) are verified frames or known gaps; nothing beyond is served. */
  verifiedEnd: number;
  /** Next offset after the last verified frame (or the base when empty). */
  endOffset: number;
  /** Newest commitMs of any record (0 when empty); drives age retention. */
  newestCommitMs: number;
  /** Bytes of the file on disk (verified frames, gaps and any corrupt tail). */
  fileBytes: number;
  /** The read-write handle while this is the active segment (or being recovered); null once sealed. */
  #writer: LogFile | null;
  /** Reads holding #writer (or the handle it was before seal()). */
  #writerRefs = 0;
  #writerToClose: LogFile | null = null;
  #writerClosed: (() => void) | null = null;
  /** Resolves once the writer handle is closed (after seal()). */
  #sealed: Promise<void> = Promise.resolve();
  #retired = false;
  readonly #handles: SegmentHandles;

  constructor(
    baseOffset: number,
    path: string,
    writer: LogFile,
    indexIntervalBytes: number,
    handles: SegmentHandles,
  ) {
    this.baseOffset = baseOffset;
    this.path = path;
    this.#writer = writer;
    this.#handles = handles;
    this.index = new SparseIndex(indexIntervalBytes);
    this.verifiedEnd = 0;
    this.endOffset = baseOffset;
    this.newestCommitMs = 0;
    this.fileBytes = 0;
  }

  /** The read-write handle: only the active segment has one (commits, recovery). */
  get writer(): LogFile {
    if (this.#writer === null) throw new Error(`segment ${this.path} is sealed`);
    return this.#writer;
  }

  /**
   * Pins a handle for a read; release() must follow. The active segment
   * lends its writer; a sealed one goes through the store's bounded cache
   * (opened on demand). Null once retired: the segment was deleted or its
   * log closed. While pinned the fd is neither closed nor reused, so a
   * pread never lands in another file.
   */
  async acquireRead(): Promise<SegmentLease | null> {
    if (this.#retired) return null;
    const w = this.#writer;
    if (w !== null) {
      this.#writerRefs++;
      let released = false;
      return {
        file: w,
        release: () => {
          if (released) return;
          released = true;
          this.#writerRefs--;
          if (this.#writerRefs === 0) this.#closeWriterIfIdle();
        },
      };
    }
    return this.#handles.pin(this, this.path);
  }

  /**
   * The segment is sealed (a newer one is active, or recovery is done with
   * it): later reads go through the cache; the writer is closed once no
   * read holds it.
   */
  seal(): Promise<void> {
    const w = this.#writer;
    if (w === null) return this.#sealed;
    this.#writer = null;
    this.#writerToClose = w;
    this.#sealed = new Promise((resolve) => {
      this.#writerClosed = resolve;
    });
    this.#closeWriterIfIdle();
    return this.#sealed;
  }

  /**
   * Refuses new reads and closes every handle of this segment once no read
   * holds it (so a deleted segment's fd number is never reused under an
   * in-flight pread).
   */
  async retire(): Promise<void> {
    this.#retired = true;
    await Promise.all([this.seal(), this.#handles.drop(this)]);
  }

  #closeWriterIfIdle(): void {
    const w = this.#writerToClose;
    if (w === null || this.#writerRefs > 0) return;
    this.#writerToClose = null;
    const done = this.#writerClosed;
    this.#writerClosed = null;
    // A failed close still frees the fd (close(2) releases it even on error).
    w.close().then(
      () => done?.(),
      () => done?.(),
    );
  }

  /** The header of the frame at pos (null past the window's end); a malformed one throws. */
  async #headerAt(win: FrameWindow, pos: number, maxFrameBytes: number): Promise<FrameHeader | null> {
    if (!(await win.ensure(pos, frameHeaderBytes))) return null;
    const parsed = parseFrameHeader(win.buf, pos - win.start, maxFrameBytes);
    if (!parsed.ok) throw new Error(`segment ${this.path}: bad frame at ${pos} (${parsed.problem})`);
    return parsed.header;
  }

  /**
   * The whole frame at pos in the window, CRC-checked again (each property
   * checked after read as well as before write): its index in win.buf, null
   * past the window's end; a mismatch throws rather than serving bad bytes.
   */
  async #verifiedFrameAt(win: FrameWindow, pos: number, h: FrameHeader): Promise<number | null> {
    if (!(await win.ensure(pos, frameBytes(h)))) return null;
    const at = pos - win.start;
    if (!verifyFrameCrc(win.buf, at, h)) throw new Error(`segment ${this.path}: CRC mismatch at ${pos}`);
    return at;
  }

  /**
   * The one walk over this segment's frames both reads share: from the
   * sparse-index position of fromOffset, over recovery's gaps, up to the
   * first frame at or above `hwm` or the verified end. Each frame's header is
   * read first, so a frame the visitor skips is never read whole; one it
   * reads is CRC-checked again. The visitor's callbacks are synchronous, so
   * a frame costs no more awaits (nor allocations) than its two reads.
   */
  async #walkFrames(
    file: LogFile,
    fromOffset: number,
    limits: FrameWalkLimits,
    visit: FrameVisitor,
  ): Promise<void> {
    const win = new FrameWindow(file, this.verifiedEnd, limits.chunkBytes);
    let pos = this.index.seek(fromOffset);
    while (pos < this.verifiedEnd && visit.more()) {
      const gapEnd = this.gaps.get(pos);
      if (gapEnd !== undefined) {
        if (!visit.gap()) return;
        pos = gapEnd;
        continue;
      }
      const h = await this.#headerAt(win, pos, limits.maxFrameBytes);
      if (h === null || h.baseOffset >= limits.hwm) return;
      const step = visit.header(h);
      if (step === "stop") return;
      if (step === "read") {
        const at = await this.#verifiedFrameAt(win, pos, h);
        if (at === null || !visit.frame(win.buf, at, h, pos)) return;
      }
      pos += frameBytes(h);
    }
  }

  /**
   * Raw frames (CRC-checked again, copied out) starting exactly at
   * limits.fromOffset: what a follower appends byte for byte (replication).
   */
  async readRawFrames(file: LogFile, limits: RawReadLimits): Promise<RawReadResult> {
    const frames: Buffer[] = [];
    let bytes = 0;
    let next = limits.fromOffset;
    let end = "ok" as "ok" | "gap" | "misaligned";
    await this.#walkFrames(file, limits.fromOffset, limits, {
      more: () => bytes < limits.maxBytes,
      // A gap before the wanted offset is skipped (a frame after it that
      // starts above fromOffset answers "misaligned"); one after frames
      // were taken ends the contiguous run.
      gap: () => {
        if (frames.length === 0) return true;
        end = "gap";
        return false;
      },
      header: (h) => {
        if (h.baseOffset + h.count <= next) return "skip";
        if (h.baseOffset === next) return "read";
        end = "misaligned";
        return "stop";
      },
      frame: (buf, at, h) => {
        const size = frameBytes(h);
        frames.push(Buffer.from(buf.subarray(at, at + size)));
        bytes += size;
        next = h.baseOffset + h.count;
        return true;
      },
    });
    if (end === "misaligned") return { kind: "misaligned" };
    return { kind: end, frames, bytes, nextOffset: next };
  }

  /**
   * Appends records with offsets in [fromOffset, hwm) to `out`, reading
   * `file` (a lease of this segment) from the sparse-index position. Returns the running key+payload byte count and
   * whether a limit (records or bytes) was reached. Frames are
   * CRC-checked again on read (each property checked after read as well as
   * before write); a mismatch throws rather than serving bad bytes.
   */
  async readInto(
    file: LogFile,
    limits: SegmentReadLimits,
    out: StoredRecord[],
    bytesSoFar: number,
  ): Promise<{ bytes: number; full: boolean }> {
    let bytes = bytesSoFar;
    let bytesFull = false;
    await this.#walkFrames(file, limits.fromOffset, limits, {
      more: () => out.length < limits.maxRecords,
      gap: () => true,
      header: (h) => (h.baseOffset + h.count <= limits.fromOffset ? "skip" : "read"),
      frame: (buf, at, h, pos) => {
        const frameRecords: StoredRecord[] = [];
        if (!decodeFrameRecords(buf, at, h, limits.fromOffset, frameRecords)) {
          throw new Error(`segment ${this.path}: malformed records at ${pos}`);
        }
        for (const r of frameRecords) {
          if (r.offset >= limits.hwm || out.length >= limits.maxRecords) break;
          const recBytes = r.key.length + r.payload.length;
          if (out.length > 0 && bytes + recBytes > limits.maxBytes) {
            bytesFull = true;
            return false;
          }
          out.push(r);
          bytes += recBytes;
        }
        return true;
      },
    });
    return { bytes, full: bytesFull || out.length >= limits.maxRecords };
  }
}
