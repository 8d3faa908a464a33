// Min-heaps for the consumer queue: an indexed heap of leases ordered by
// expiry (each item knows its slot, so extend and ack/nack are O(log n)
// without stale entries piling up), and a plain heap of offsets waiting for
// redelivery. Pure; bounded by the caller (max in flight per partition).

export interface HeapItem {
  expiresAtMs: number;
  /** Slot in the heap; -1 when not in one. Owned by LeaseHeap. */
  heapIndex: number;
}

export class LeaseHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    item.heapIndex = this.#items.length;
    this.#items.push(item);
    this.#up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Removes an item that is in this heap (a no-op for one that is not). */
  remove(item: T): void {
    const i = item.heapIndex;
    if (i < 0 || this.#items[i] !== item) return;
    const last = this.#items.pop() as T;
    item.heapIndex = -1;
    if (last === item) return;
    this.#items[i] = last;
    last.heapIndex = i;
    this.#down(i);
    this.#up(last.heapIndex);
  }

  /** Restores order after item.expiresAtMs changed. */
  update(item: T): void {
    const i = item.heapIndex;
    if (i < 0 || this.#items[i] !== item) return;
    this.#up(i);
    this.#down(item.heapIndex);
  }

  #swap(a: number, b: number): void {
    const x = this.#items[a] as T;
    const y = this.#items[b] as T;
    this.#items[a] = y;
    this.#items[b] = x;
    y.heapIndex = a;
    x.heapIndex = b;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#items[parent] as T).expiresAtMs <= (this.#items[i] as T).expiresAtMs) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let min = i;
      if (l < n && (this.#items[l] as T).expiresAtMs < (this.#items[min] as T).expiresAtMs) min = l;
      if (r < n && (this.#items[r] as T).expiresAtMs < (this.#items[min] as T).expiresAtMs) min = r;
      if (min === i) return;
      this.#swap(i, min);
      i = min;
    }
  }
}

/** A min-heap of integers (offsets). */
export class OffsetHeap {
  readonly #items: number[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): number | undefined {
    return this.#items[0];
  }

  push(v: number): void {
    const a = this.#items;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as number) <= v) break;
      a[i] = a[p] as number;
      i = p;
    }
    a[i] = v;
  }

  pop(): number | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    const n = a.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (a[r] as number) < (a[l] as number) ? r : l;
      if ((a[c] as number) >= last) break;
      a[i] = a[c] as number;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
