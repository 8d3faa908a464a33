// Pure bookkeeping of a bounded set of open file handles shared by many
// keys (sealed log segments; segment-handles.ts does the I/O). It decides
// which handle to open, which to evict and when a caller must wait; it never
// touches a file.
//
// Rules:
//  - at most `max` handles exist at once, counting those being opened and
//    those being closed (an fd is only free once close() returned);
//  - a pinned handle (refs > 0: a read in flight) is never evicted; a
//    dropped one (its segment was deleted or its log closed) is closed as
//    soon as its last pin goes;
//  - eviction takes the least recently used unpinned handle, and the
//    caller that evicted opens only once that close returned;
//  - when every slot is pinned, a new key waits (FIFO in the I/O layer):
//    the bound is strict, never exceeded to serve a read.
// Reads pin one segment at a time (never one while holding another), so a
// waiter always gets a slot once some read finishes; a cap of 1 still works.

export type PinDecision<K> =
  /** The handle is open or being opened: use (await) it. */
  | { kind: "hit" }
  /** A slot is free: open it now. */
  | { kind: "open" }
  /**
   * Full: close `victim` (already out of the set, counted as closing until
   * closed()), then ask again. Not pinned.
   */
  | { kind: "evict"; victim: K }
  /** No slot free: retry once a slot frees (unpin, closed, dropped). */
  | { kind: "wait" }
  /** The key was dropped: it is never handed out again (its file may be gone or replaced). */
  | { kind: "gone" };

interface Entry {
  refs: number;
  dropped: boolean;
}

export class HandleLru<K> {
  readonly max: number;
  /** key → entry; Map order = least recently used first. */
  readonly #entries = new Map<K, Entry>();
  #closing = 0;

  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError("HandleLru: max must be a positive integer");
    this.max = max;
  }

  /** Handles that hold (or are about to hold, or still hold while closing) an fd. */
  get used(): number {
    return this.#entries.size + this.#closing;
  }

  get pinned(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.refs > 0) n++;
    return n;
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** A read wants `key`'s handle. On "hit" and "open" it is pinned (unpin() must follow). */
  pin(key: K): PinDecision<K> {
    const e = this.#entries.get(key);
    if (e !== undefined && !e.dropped) {
      e.refs++;
      this.#entries.delete(key);
      this.#entries.set(key, e);
      return { kind: "hit" };
    }
    if (e !== undefined) return { kind: "gone" };
    if (this.used >= this.max) {
      const victim = this.#lruUnpinned();
      if (victim === undefined) return { kind: "wait" };
      this.#entries.delete(victim);
      this.#closing++;
      return { kind: "evict", victim };
    }
    this.#entries.set(key, { refs: 1, dropped: false });
    return { kind: "open" };
  }

  /** A read finished. Returns true when the handle must be closed now (dropped and idle). */
  unpin(key: K): boolean {
    const e = this.#entries.get(key);
    if (e === undefined) throw new Error("HandleLru.unpin: not pinned");
    e.refs--;
    if (e.refs === 0 && e.dropped) {
      this.#entries.delete(key);
      this.#closing++;
      return true;
    }
    return false;
  }

  /** The open of `key` failed: its entry goes (every pin of it failed with the open). */
  openFailed(key: K): void {
    this.#entries.delete(key);
  }

  /**
   * No more pins of `key` (its segment was deleted or its log closed).
   * Returns true when its handle must be closed now (open and idle); a
   * pinned one is closed by the last unpin().
   */
  drop(key: K): boolean {
    const e = this.#entries.get(key);
    if (e === undefined) return false;
    if (e.refs > 0) {
      e.dropped = true;
      return false;
    }
    this.#entries.delete(key);
    this.#closing++;
    return true;
  }

  /** A close decided by pin/unpin/drop returned: its slot is free. */
  closed(): void {
    if (this.#closing === 0) throw new Error("HandleLru.closed: nothing closing");
    this.#closing--;
  }

  #lruUnpinned(): K | undefined {
    for (const [k, e] of this.#entries) if (e.refs === 0 && !e.dropped) return k;
    return undefined;
  }
}
