import { describe, expect, it } from "vitest";
import { type HeapItem, LeaseHeap, OffsetHeap } from "./consumer-heap.ts";

interface Item extends HeapItem {
  id: number;
}

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("LeaseHeap", () => {
  it("pops in expiry order through random push, remove and update", () => {
    const rand = rng(7);
    const heap = new LeaseHeap<Item>();
    const live = new Map<number, Item>();
    for (let step = 0; step < 5_000; step++) {
      const op = rand();
      if (op < 0.5 || live.size === 0) {
        const it: Item = { id: step, expiresAtMs: Math.floor(rand() * 1000), heapIndex: -1 };
        heap.push(it);
        live.set(step, it);
      } else {
        const ids = [...live.keys()];
        const victim = live.get(ids[Math.floor(rand() * ids.length)] as number) as Item;
        if (op < 0.75) {
          heap.remove(victim);
          live.delete(victim.id);
          expect(victim.heapIndex).toBe(-1);
        } else {
          victim.expiresAtMs = Math.floor(rand() * 1000);
          heap.update(victim);
        }
      }
      expect(heap.size).toBe(live.size);
      const min = Math.min(...[...live.values()].map((i) => i.expiresAtMs));
      if (live.size > 0) expect(heap.peek()?.expiresAtMs).toBe(min);
    }
    const out: number[] = [];
    for (let it = heap.pop(); it !== undefined; it = heap.pop()) out.push(it.expiresAtMs);
    expect(out).toEqual([...out].sort((a, b) => a - b));
    expect(out).toHaveLength(live.size);
  });

  it("ignores remove and update of an item it does not hold", () => {
    const heap = new LeaseHeap<Item>();
    const a: Item = { id: 1, expiresAtMs: 5, heapIndex: -1 };
    heap.remove(a);
    heap.update(a);
    heap.push(a);
    heap.remove(a);
    heap.remove(a);
    expect(heap.size).toBe(0);
  });
});

describe("OffsetHeap", () => {
  it("pops sorted", () => {
    const rand = rng(3);
    const h = new OffsetHeap();
    const values = Array.from({ length: 2_000 }, () => Math.floor(rand() * 10_000));
    for (const v of values) h.push(v);
    const out: number[] = [];
    for (let v = h.pop(); v !== undefined; v = h.pop()) out.push(v);
    expect(out).toEqual([...values].sort((a, b) => a - b));
    expect(h.pop()).toBeUndefined();
  });
});
