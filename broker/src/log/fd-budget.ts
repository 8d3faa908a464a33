// The file-descriptor budget of the log store, pure: how many partition logs
// may be open at once (each holds a segment file and its index, 2+ fds).
// Past the budget a new open is refused (TOO_MANY_OPEN_LOGS → 503) instead
// of running the process out of descriptors, which wedges everything,
// /healthz included. Also keeps the open logs in least-recently-used order,
// so a caller can tell which ones have sat unused longest (idleSince).
//
// Why refuse rather than close the least recently used log: partition logs
// are held by long-lived users (consumer queues, the dispatcher, moves) that
// keep their handle; closing one under them would fail their next read.
// Inside a log, sealed segments' read handles are a separate bounded cache
// (segment-handles.ts, --max-segment-fds) that does close idle ones.

export class FdBudget {
  readonly maxOpen: number;
  /** key → last use (ms); Map order = least recently used first. */
  readonly #open = new Map<string, number>();
  /** Opens granted and not yet recorded as open or abandoned. */
  #reserved = 0;

  constructor(maxOpen: number) {
    this.maxOpen = maxOpen;
  }

  get openCount(): number {
    return this.#open.size + this.#reserved;
  }

  /** Before opening a log: true (and a slot is reserved) when the budget has room. */
  reserve(): boolean {
    if (this.openCount >= this.maxOpen) return false;
    this.#reserved++;
    return true;
  }

  /** The reserved open finished (opened) or failed (not opened). */
  settle(key: string, opened: boolean, nowMs: number): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
    if (opened) this.#open.set(key, nowMs);
  }

  /** A use of an open log: moves it to the most recently used end. */
  touch(key: string, nowMs: number): void {
    if (!this.#open.has(key)) return;
    this.#open.delete(key);
    this.#open.set(key, nowMs);
  }

  closed(key: string): void {
    this.#open.delete(key);
  }

  /** Open logs unused since before `beforeMs`, least recently used first. */
  idleSince(beforeMs: number): string[] {
    const out: string[] = [];
    for (const [k, t] of this.#open) {
      if (t >= beforeMs) break;
      out.push(k);
    }
    return out;
  }
}
