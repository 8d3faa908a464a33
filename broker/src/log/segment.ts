// One segment file `<20-digit base offset>.log` of a partition log: its
// open file handle (shared by the writer and positional readers), the
// verified end position, the sparse index, and the corrupt gaps found at
// recovery. A segment never serves bytes at or beyond `verifiedEnd`: the
// writer only advances it after fsync + read-back verification.

import {
  decodeFrameRecords,
  frameBytes,
  frameHeaderBytes,
  parseFrameHeader,
  verifyFrameCrc,
} from "../core/log-codec.ts";
import type { StoredRecord } from "../core/records.ts";
import type { LogFile } from "./log-io.ts";
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

export class Segment {
  readonly baseOffset: number;
  readonly path: string;
  readonly index: SparseIndex;
  /** Corrupt ranges keyed by their start position. */
  readonly gaps = new Map<number, number>();
  file: LogFile;
  /** Bytes [0, verifiedEnd) are verified frames or known gaps; nothing beyond is served. */
  verifiedEnd: number;
  /** Next offset after the last verified frame (or the base when empty). */
  endOffset: number;
  /** Newest commitMs of any record (0 when empty); drives age retention. */
  newestCommitMs: number;
  /** Bytes of the file on disk (verified frames, gaps and any corrupt tail). */
  fileBytes: number;
  #refs = 0;
  #retired = false;
  #closeWhenIdle: (() => void) | null = null;

  constructor(baseOffset: number, path: string, file: LogFile, indexIntervalBytes: number) {
    this.baseOffset = baseOffset;
    this.path = path;
    this.file = file;
    this.index = new SparseIndex(indexIntervalBytes);
    this.verifiedEnd = 0;
    this.endOffset = baseOffset;
    this.newestCommitMs = 0;
    this.fileBytes = 0;
  }

  /** Pins the file handle for a read; release() must follow. False once retired. */
  acquire(): boolean {
    if (this.#retired) return false;
    this.#refs++;
    return true;
  }

  release(): void {
    this.#refs--;
    if (this.#refs === 0 && this.#closeWhenIdle !== null) this.#closeWhenIdle();
  }

  /**
   * Refuses new reads and closes the handle once no read holds it (so a
   * deleted segment's fd number is never reused under an in-flight pread).
   */
  retire(): Promise<void> {
    this.#retired = true;
    return new Promise((resolve, reject) => {
      const run = () => {
        this.#closeWhenIdle = null;
        this.file.close().then(resolve, reject);
      };
      if (this.#refs === 0) run();
      else this.#closeWhenIdle = run;
    });
  }

  /**
   * Appends records with offsets in [fromOffset, hwm) to `out`, reading from
   * the sparse-index position. Returns the running key+payload byte count and
   * whether a limit (records or bytes) was reached. Frames are
   * CRC-checked again on read (each property checked after read as well as
   * before write); a mismatch throws rather than serving bad bytes.
   */
  async readInto(
    limits: SegmentReadLimits,
    out: StoredRecord[],
    bytesSoFar: number,
  ): Promise<{ bytes: number; full: boolean }> {
    const win = new FrameWindow(this.file, this.verifiedEnd, limits.chunkBytes);
    let pos = this.index.seek(limits.fromOffset);
    let bytes = bytesSoFar;
    while (pos < this.verifiedEnd && out.length < limits.maxRecords) {
      const gapEnd = this.gaps.get(pos);
      if (gapEnd !== undefined) {
        pos = gapEnd;
        continue;
      }
      if (!(await win.ensure(pos, frameHeaderBytes))) break;
      const parsed = parseFrameHeader(win.buf, pos - win.start, limits.maxFrameBytes);
      if (!parsed.ok) throw new Error(`segment ${this.path}: bad frame at ${pos} (${parsed.problem})`);
      const h = parsed.header;
      const size = frameBytes(h);
      if (h.baseOffset >= limits.hwm) break;
      if (h.baseOffset + h.count <= limits.fromOffset) {
        pos += size;
        continue;
      }
      if (!(await win.ensure(pos, size))) break;
      const at = pos - win.start;
      if (!verifyFrameCrc(win.buf, at, h)) throw new Error(`segment ${this.path}: CRC mismatch at ${pos}`);
      const frameRecords: StoredRecord[] = [];
      if (!decodeFrameRecords(win.buf, at, h, limits.fromOffset, frameRecords)) {
        throw new Error(`segment ${this.path}: malformed records at ${pos}`);
      }
      for (const r of frameRecords) {
        if (r.offset >= limits.hwm || out.length >= limits.maxRecords) break;
        const recBytes = r.key.length + r.payload.length;
        if (out.length > 0 && bytes + recBytes > limits.maxBytes) return { bytes, full: true };
        out.push(r);
        bytes += recBytes;
      }
      pos += size;
    }
    return { bytes, full: out.length >= limits.maxRecords };
  }
}
