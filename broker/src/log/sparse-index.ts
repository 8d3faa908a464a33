// In-memory sparse offset index for one segment: (base offset, file position)
// of a frame start about every `intervalBytes`, plus every frame that
// follows a corrupt gap. Pure (no I/O). It is rebuilt at open from the
// recovery scan, which reads every frame anyway (CRC check + dedup rebuild),
// so no .index files are written: nothing to keep in sync or recover.

export class SparseIndex {
  readonly #intervalBytes: number;
  readonly #offsets: number[] = [];
  readonly #positions: number[] = [];
  #lastPosition = -1;

  constructor(intervalBytes: number) {
    if (!(intervalBytes > 0)) throw new Error("SparseIndex: intervalBytes must be > 0");
    this.#intervalBytes = intervalBytes;
  }

  /**
   * Offers a frame start; keeps it when it is the first, when `force` (just
   * after a gap), or when it lies at least intervalBytes past the last entry.
   * Frames must be offered in file order with increasing offsets.
   */
  offer(baseOffset: number, position: number, force: boolean): void {
    const n = this.#offsets.length;
    if (n > 0) {
      if (position <= this.#lastPosition || baseOffset <= this.#offsets[n - 1]!) {
        throw new Error("SparseIndex: entries must increase");
      }
      if (!force && position - this.#lastPosition < this.#intervalBytes) return;
    }
    this.#offsets.push(baseOffset);
    this.#positions.push(position);
    this.#lastPosition = position;
  }

  /** Drops entries at or beyond `position` (after a rolled-back tail). */
  truncate(position: number): void {
    while (this.#positions.length > 0 && this.#positions[this.#positions.length - 1]! >= position) {
      this.#positions.pop();
      this.#offsets.pop();
    }
    this.#lastPosition = this.#positions.length > 0 ? this.#positions[this.#positions.length - 1]! : -1;
  }

  /** File position of the last indexed frame with base offset <= offset, or 0. */
  seek(offset: number): number {
    let lo = 0;
    let hi = this.#offsets.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#offsets[mid]! <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? 0 : this.#positions[found]!;
  }

  get size(): number {
    return this.#offsets.length;
  }
}
