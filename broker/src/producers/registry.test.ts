import { describe, expect, it } from "vitest";
import {
  memoryRegistryStore,
  openProducerRegistry,
  ProducerFencedError,
  type RegistryStore,
} from "./registry.ts";

/** A store whose peek() lags: only load() sees the latest write (a watch that has not delivered yet). */
function laggingStore(): RegistryStore & { loads: number } {
  const inner = memoryRegistryStore();
  const s = {
    loads: 0,
    load: () => {
      s.loads++;
      return inner.load();
    },
    save: inner.save,
  };
  return s;
}

describe("producer registry", () => {
  it("lookup() re-reads the store on a miss (an id or an epoch from another broker), epochOf() does not", async () => {
    const store = laggingStore();
    const a = await openProducerRegistry(store, 10);
    const b = await openProducerRegistry(store, 10);
    const named = await a.init("n");
    const fromB = await b.init();
    const bumped = await b.init("n");
    expect(a.epochOf(fromB.id)).toBeUndefined();
    expect(await a.lookup(fromB.id, 0)).toBe(0);
    expect(a.epochOf(named.id)).toBe(bumped.epoch); // learnt by the same read
    const before = store.loads;
    // A known id at a known epoch, or a lower (fenced) one, needs no read.
    expect(await a.lookup(named.id, 0)).toBe(1);
    expect(await a.lookup(named.id, 1)).toBe(1);
    expect(store.loads).toBe(before);
    // An epoch nobody issued: one read, then still the known epoch.
    expect(await a.lookup(named.id, 7)).toBe(1);
    expect(store.loads).toBe(before + 1);
  });

  it("a re-init from an epoch the name has left is refused; from the current one it bumps", async () => {
    const store = memoryRegistryStore();
    const a = await openProducerRegistry(store, 10);
    const b = await openProducerRegistry(store, 10);
    const old = await a.init("n");
    const cur = await b.init("n");
    await expect(a.init("n", old.epoch)).rejects.toBeInstanceOf(ProducerFencedError);
    const bumped = await a.init("n", cur.epoch);
    expect(bumped).toEqual({ id: cur.id, epoch: cur.epoch + 1 });
    // Its answer lost, the same re-init is retried (through the other broker, whose copy is behind): same epoch.
    expect(await b.init("n", cur.epoch)).toEqual(bumped);
    // A new instance of the name takes it over; the re-initialised one can no longer come back.
    const next = await b.init("n");
    expect(next.epoch).toBe(bumped.epoch + 1);
    await expect(a.init("n", cur.epoch)).rejects.toBeInstanceOf(ProducerFencedError);
    await expect(a.init("n", bumped.epoch)).rejects.toBeInstanceOf(ProducerFencedError);
    await expect(a.init("unknown-name", 0)).rejects.toBeInstanceOf(ProducerFencedError);
  });

  it("concurrent misses share reads: at most one running and one queued", async () => {
    const store = laggingStore();
    const a = await openProducerRegistry(store, 10);
    const before = store.loads;
    await Promise.all(Array.from({ length: 50 }, (_, i) => a.lookup(`p-${900_000 + i}`, 0)));
    expect(store.loads - before).toBeLessThanOrEqual(2);
  });

  it("two registries on one store never issue an id twice; a name's epochs climb across them", async () => {
    const store = memoryRegistryStore();
    const a = await openProducerRegistry(store, 3);
    const b = await openProducerRegistry(store, 3);
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).init()));
    expect(new Set(ids.map((x) => x.id)).size).toBe(40);
    const epochs = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).init("n")));
    expect(epochs.map((e) => e.epoch).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
