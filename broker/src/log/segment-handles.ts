// The log store's shared, bounded cache of read handles for sealed
// segments (--max-segment-fds). A partition with thousands of retained
// segments used to hold one open fd per segment; now a sealed segment's
// file is opened when a read needs it and closed when evicted (least
// recently used, never while a read holds it) or when the segment is
// deleted or its log closed. The active segment keeps its own read-write
// handle outside this cache (segment.ts).
//
// Keys are Segment objects, not paths: a move install or a topic re-create
// puts a different file at the same path, and a handle opened for the old
// segment must never serve the new one. A key once dropped is never opened
// again, so a read racing retention gets "gone" (OFFSET_EXPIRED upstream)
// rather than reopening a path retention just unlinked. The decisions are
// handle-lru.ts (pure); this module only opens, closes and queues.

import { HandleLru } from "./handle-lru.ts";
import type { LogFile, LogIo } from "./log-io.ts";

/** A pinned open handle: the fd stays valid (not closed, not reused) until release(). */
export interface SegmentLease {
  file: LogFile;
  release(): void;
}

export interface SegmentHandlesLogger {
  warn(obj: object, msg: string): void;
}

export class SegmentHandles {
  readonly #io: LogIo;
  readonly #lru: HandleLru<object>;
  readonly #files = new Map<object, Promise<LogFile>>();
  readonly #dropped = new WeakSet<object>();
  /** Dropped keys still pinned: resolved once their handle is closed. */
  readonly #dropWaits = new Map<object, () => void>();
  #waiters: Array<() => void> = [];
  readonly #logger: SegmentHandlesLogger | undefined;
  #opens = 0;

  constructor(io: LogIo, maxOpen: number, logger?: SegmentHandlesLogger) {
    this.#io = io;
    this.#lru = new HandleLru(maxOpen);
    this.#logger = logger;
  }

  get maxOpen(): number {
    return this.#lru.max;
  }

  /** Handles holding an fd now (open, opening or closing). Never above maxOpen. */
  get openCount(): number {
    return this.#lru.used;
  }

  /** Files opened so far (a measure of cache misses). */
  get opens(): number {
    return this.#opens;
  }

  /** Reads waiting for a free slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Pins `key`'s handle, opening `path` when it is not open; waits while
   * every slot is pinned. Null when the key was dropped (its segment is
   * deleted or its log closed), including while its open was under way.
   */
  async pin(key: object, path: string): Promise<SegmentLease | null> {
    for (;;) {
      if (this.#dropped.has(key)) return null;
      const d = this.#lru.pin(key);
      if (d.kind === "gone") return null;
      if (d.kind === "wait") {
        await new Promise<void>((r) => this.#waiters.push(r));
        continue;
      }
      if (d.kind === "evict") {
        // The slot is ours to take once the victim's fd is really closed.
        await this.#close(d.victim);
        continue;
      }
      if (d.kind === "open") {
        this.#opens++;
        const opening = this.#io.open(path, false);
        this.#files.set(key, opening);
        // Registered before any pinner awaits it, so the entry is gone before they see the error.
        opening.catch(() => {
          if (this.#files.get(key) === opening) this.#files.delete(key);
          this.#lru.openFailed(key);
          this.#dropWaits.get(key)?.();
          this.#dropWaits.delete(key);
          this.#wake();
        });
      }
      const opening = this.#files.get(key)!;
      let file: LogFile;
      try {
        file = await opening;
      } catch (err) {
        // Retention unlinked the file between the decision to open and the open.
        if (this.#dropped.has(key)) return null;
        throw err;
      }
      let released = false;
      return {
        file,
        release: () => {
          if (released) return;
          released = true;
          this.#unpin(key);
        },
      };
    }
  }

  /**
   * Ends `key`: no new pins; its handle is closed now if idle, else when the
   * last read releases it. Resolves once it is closed.
   */
  drop(key: object): Promise<void> {
    this.#dropped.add(key);
    if (this.#lru.drop(key)) return this.#close(key);
    if (!this.#lru.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.#dropWaits.set(key, resolve));
  }

  #unpin(key: object): void {
    if (this.#lru.unpin(key)) {
      const done = this.#dropWaits.get(key);
      this.#dropWaits.delete(key);
      void this.#close(key).then(() => done?.());
    }
    this.#wake();
  }

  /** Closes a handle the LRU released (evicted, or dropped and idle); frees its slot once closed. */
  async #close(key: object): Promise<void> {
    const opening = this.#files.get(key);
    this.#files.delete(key);
    try {
      if (opening !== undefined) await (await opening).close();
    } catch (err) {
      this.#logger?.warn({ err }, "closing a segment read handle failed");
    } finally {
      this.#lru.closed();
      this.#wake();
    }
  }

  /** Every waiter retries in arrival order; those that still find no slot queue again, in order. */
  #wake(): void {
    if (this.#waiters.length === 0) return;
    const ready = this.#waiters;
    this.#waiters = [];
    for (const r of ready) r();
  }
}
