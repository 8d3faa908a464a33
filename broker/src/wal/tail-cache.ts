// The most recent durable groups, kept as the exact bytes that were written,
// so the dispatcher (which usually reads what was just appended) decodes them
// from memory instead of the file. Holds a contiguous seq range ending at the
// durable end; evicts oldest first by bytes and below the checkpoint.

import { decodeCheckedWalFrame, walFrameBytes } from "../core/wal-codec.ts";
import { budgetFull, type ReadBudget } from "./segments.ts";

/** Default cap on cached group bytes (beyond it reads go to the file / page cache). */
export const walTailCacheBytesDefault = 16 * 1024 * 1024;

interface CachedGroup {
  firstSeq: number;
  lastSeq: number;
  buf: Buffer;
}

export class TailCache {
  readonly #capBytes: number;
  #groups: Array<CachedGroup | undefined> = [];
  #head = 0;
  #bytes = 0;
  // Where the last read stopped, so sequential reads inside a large group do not rescan it.
  #cursorGroup: CachedGroup | undefined;
  #cursorSeq = 0;
  #cursorOffset = 0;

  constructor(capBytes: number) {
    this.#capBytes = capBytes;
  }

  /** Lowest cached seq, or undefined when empty. */
  get firstSeq(): number | undefined {
    return this.#groups[this.#head]?.firstSeq;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Adds a durable group (seqs must continue the cached range). Too-large groups clear the cache. */
  push(buf: Buffer, firstSeq: number, lastSeq: number): void {
    const last = this.#groups[this.#groups.length - 1];
    if (buf.length > this.#capBytes || (last !== undefined && last.lastSeq + 1 !== firstSeq)) {
      this.clear();
      if (buf.length > this.#capBytes) return;
    }
    this.#groups.push({ firstSeq, lastSeq, buf });
    this.#bytes += buf.length;
    while (this.#bytes > this.#capBytes) this.#dropOldest();
  }

  /** Drops groups whose records are all below `seq` (already dispatched). */
  evictBelow(seq: number): void {
    for (let g = this.#groups[this.#head]; g !== undefined && g.lastSeq < seq; g = this.#groups[this.#head]) {
      this.#dropOldest();
    }
  }

  clear(): void {
    this.#groups = [];
    this.#head = 0;
    this.#bytes = 0;
    this.#cursorGroup = undefined;
  }

  #dropOldest(): void {
    const g = this.#groups[this.#head];
    if (g === undefined) return;
    this.#groups[this.#head] = undefined;
    this.#head++;
    this.#bytes -= g.buf.length;
    if (this.#cursorGroup === g) this.#cursorGroup = undefined;
    if (this.#head > 1024 && this.#head * 2 > this.#groups.length) {
      this.#groups = this.#groups.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Index of the cached group holding `seq` (caller checked seq >= firstSeq). */
  #groupIndex(seq: number): number {
    let lo = this.#head;
    let hi = this.#groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#groups[mid]!.firstSeq <= seq) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Serves records from `fromSeq` (which must be >= firstSeq) into the budget. */
  read(fromSeq: number, budget: ReadBudget): void {
    for (let i = this.#groupIndex(fromSeq); i < this.#groups.length; i++) {
      const g = this.#groups[i]!;
      let offset = 0;
      let seq = g.firstSeq;
      if (this.#cursorGroup === g && this.#cursorSeq <= fromSeq) {
        offset = this.#cursorOffset;
        seq = this.#cursorSeq;
      }
      for (; offset < g.buf.length; seq++) {
        const frameBytes = walFrameBytes(g.buf, offset);
        if (seq >= fromSeq) {
          if (budgetFull(budget, frameBytes)) {
            this.#cursorGroup = g;
            this.#cursorSeq = seq;
            this.#cursorOffset = offset;
            return;
          }
          budget.out.push(decodeCheckedWalFrame(g.buf, offset));
          budget.bytes += frameBytes;
        }
        offset += frameBytes;
      }
    }
  }
}
