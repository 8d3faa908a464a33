import { describe, expect, it } from "vitest";
import { barrierWaitMs, readFailureHoldMs } from "../core/producer-fence.ts";
import {
  memoryRegistryStore,
  openProducerRegistry,
  ProducerFencedError,
  ProducerRegistryStaleError,
  type RegistryFenceOptions,
  type RegistryStore,
} from "./registry.ts";
import type { RegistryState } from "./registry-state.ts";

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

/**
 * One shared memory store seen through a broker's own copy: reads and writes
 * go through, the watched copy (peek) is whatever `watch` says (held back,
 * delivered late, or the latest), and reads can be made to fail or to wait.
 */
interface BrokerView {
  loads: number;
  failing: boolean;
  /** undefined: peek follows the store; else the state the watch last delivered. */
  watched: RegistryState | undefined;
  /** While set, reads wait for it. */
  gate: Promise<void> | undefined;
  hold(): void;
  store: RegistryStore;
}

function brokerView(inner: RegistryStore): BrokerView {
  const v: BrokerView = {
    loads: 0,
    failing: false,
    watched: undefined,
    gate: undefined,
    hold() {
      v.watched = inner.peek!();
    },
    store: {
      load: async () => {
        v.loads++;
        if (v.gate !== undefined) await v.gate;
        if (v.failing) throw new Error("store unreachable");
        return inner.load();
      },
      save: (s, rev) => inner.save(s, rev),
      peek: () => v.watched ?? inner.peek!(),
    },
  };
  return v;
}

function clock(start = 1_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe("the fence lease (cluster mode)", () => {
  const leaseMs = 1_000;
  const fenced = (
    c: { now: () => number },
    more: Partial<RegistryFenceOptions> = {},
  ): RegistryFenceOptions => ({
    leaseMs,
    nowMs: c.now,
    confirm: async () => true,
    ...more,
  });

  it("within the lease the view decides without a read; after it, one read first, shared by concurrent callers", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const b = brokerView(shared);
    const reg = await openProducerRegistry(b.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const p = await reg.init("n");
    b.hold();
    const loads = b.loads;
    c.t += 500;
    expect(await reg.lookup(p.id, 0)).toBe(0);
    expect(reg.fence()).toBeUndefined();
    expect(b.loads).toBe(loads);
    c.t += 600; // past the lease
    const answers = await Promise.all(Array.from({ length: 20 }, () => reg.lookup(p.id, 0)));
    expect(answers.every((e) => e === 0)).toBe(true);
    expect(b.loads).toBe(loads + 1);
    expect(reg.fence()).toBeUndefined(); // the read renewed it
  });

  it("a bump through another broker that the watch never delivered: after the lease the re-read fences the old epoch", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const a = await openProducerRegistry(shared, 10, Number.POSITIVE_INFINITY, fenced(c));
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const zombie = await b.init("n");
    bv.hold();
    // No confirm reaches b (a's confirm is a stub): only the lease covers b.
    const current = await a.init("n");
    expect(current.epoch).toBe(1);
    // Within b's lease its view still says epoch 0 (the window the barrier waits out).
    expect(await b.lookup(zombie.id, 0)).toBe(0);
    c.t += leaseMs;
    expect(await b.lookup(zombie.id, 0)).toBe(1);
    // The watch delivers the state from before the bump now, late: the view does not go back.
    bv.watched = undefined;
    expect(b.epochOf(zombie.id)).toBe(1);
  });

  it("a watch event does not extend the lease", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const other = await openProducerRegistry(shared, 10);
    const p = await b.init("n");
    c.t += leaseMs + 1;
    // Another broker's write reaches b through its watch (peek follows the store) ...
    await other.init("m");
    expect(b.epochOf(p.id)).toBe(0);
    const loads = bv.loads;
    // ... yet the next decision reads.
    expect(asksForRead(b.fence())).toBe(true);
    await b.fence();
    expect(bv.loads).toBe(loads + 1);
  });

  it("the store unreadable once the lease ran out: ProducerRegistryStaleError, for lookup and for the owner's fence", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const p = await b.init("n");
    bv.failing = true;
    // Within the lease nothing is read, so nothing fails.
    expect(await b.lookup(p.id, 0)).toBe(0);
    c.t += leaseMs;
    await expect(b.lookup(p.id, 0)).rejects.toBeInstanceOf(ProducerRegistryStaleError);
    await expect(b.fence()).rejects.toBeInstanceOf(ProducerRegistryStaleError);
    bv.failing = false;
    c.t += readFailureHoldMs(leaseMs); // a failed read is not repeated at once
    expect(await b.lookup(p.id, 0)).toBe(0);
  });

  it("the store unreadable: a failed read is not repeated for a short hold, so refused requests do not hammer the store", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const p = await b.init("n");
    bv.failing = true;
    c.t += leaseMs;
    const loads = bv.loads;
    // One after another (not sharing a read in flight): each refused, one read between them.
    for (let i = 0; i < 50; i++) {
      await expect(b.lookup(p.id, 0)).rejects.toBeInstanceOf(ProducerRegistryStaleError);
      await expect(b.fence()).rejects.toBeInstanceOf(ProducerRegistryStaleError);
      await expect(b.lookup("p-987654321", 0)).rejects.toBeInstanceOf(ProducerRegistryStaleError);
      c.t += 1;
    }
    expect(bv.loads).toBe(loads + 1);
    // After the hold the next decision reads again.
    c.t += readFailureHoldMs(leaseMs);
    bv.failing = false;
    expect(await b.lookup(p.id, 0)).toBe(0);
    expect(bv.loads).toBe(loads + 2);
  });

  it("a read slower than the lease still serves the decisions that arrived before it started", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const p = await b.init("n");
    c.t += leaseMs;
    let release: () => void = () => {};
    bv.gate = new Promise<void>((r) => {
      release = r;
    });
    const decided = b.lookup(p.id, 0);
    c.t += 3 * leaseMs; // the read takes three leases
    bv.gate = undefined;
    release();
    expect(await decided).toBe(0);
  });

  it("untrusted (not yet in the member list): every decision reads; expireLease() discounts earlier reads", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const bv = brokerView(shared);
    let listed = false;
    const b = await openProducerRegistry(
      bv.store,
      10,
      Number.POSITIVE_INFINITY,
      fenced(c, { trusted: () => listed }),
    );
    const p = await b.init("n");
    const loads = bv.loads;
    await b.lookup(p.id, 0);
    await b.lookup(p.id, 0);
    expect(bv.loads).toBe(loads + 2);
    listed = true;
    await b.lookup(p.id, 0);
    expect(bv.loads).toBe(loads + 2);
    c.t += 1;
    b.expireLease();
    await b.lookup(p.id, 0);
    expect(bv.loads).toBe(loads + 3);
  });

  it("confirmEpoch: an epoch another broker wrote is held after a read; one no write backs is not taken", async () => {
    const shared = memoryRegistryStore();
    const c = clock();
    const a = await openProducerRegistry(shared, 10, Number.POSITIVE_INFINITY, fenced(c));
    const bv = brokerView(shared);
    const b = await openProducerRegistry(bv.store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const zombie = await b.init("n");
    bv.hold();
    const current = await a.init("n");
    expect(b.epochOf(zombie.id)).toBe(0);
    const loads = bv.loads;
    // Above the view: read the store (the write returned before the call), then hold it.
    expect(await b.confirmEpoch(zombie.id, current.epoch)).toBe(current.epoch);
    expect(bv.loads).toBe(loads + 1);
    expect(await b.lookup(zombie.id, 0)).toBe(current.epoch);
    // At or below the view: no read.
    expect(await b.confirmEpoch(zombie.id, 0)).toBe(current.epoch);
    expect(bv.loads).toBe(loads + 1);
    // An epoch, or an id, the store does not hold: answered as the store has it, nothing taken.
    expect(await b.confirmEpoch(zombie.id, current.epoch + 1000)).toBe(current.epoch);
    expect(b.epochOf(zombie.id)).toBe(current.epoch);
    expect(await b.confirmEpoch("p-987654321", 0)).toBeUndefined();
    expect(b.epochOf("p-987654321")).toBeUndefined();
    await expect(b.confirmEpoch("not-an-id", 1)).rejects.toThrow();
    await expect(b.confirmEpoch(zombie.id, -1)).rejects.toThrow();
  });

  it("confirmEpoch: the store unreadable: rejects with ProducerRegistryStaleError, takes nothing", async () => {
    const shared = memoryRegistryStore();
    let failing = false;
    const store: RegistryStore = {
      load: async () => {
        if (failing) throw new Error("unreachable");
        return shared.load();
      },
      save: (s, rev) => shared.save(s, rev),
    };
    const c = clock();
    const b = await openProducerRegistry(store, 10, Number.POSITIVE_INFINITY, fenced(c));
    const p = await b.init("n");
    failing = true;
    await expect(b.confirmEpoch(p.id, 7)).rejects.toBeInstanceOf(ProducerRegistryStaleError);
    expect(b.epochOf(p.id)).toBe(0);
  });
});

/** Whether fence() asked for a read (a promise) rather than deciding at once. */
function asksForRead(p: Promise<void> | undefined): boolean {
  p?.catch(() => {});
  return p !== undefined;
}

describe("the re-init barrier", () => {
  const leaseMs = 60;

  it("single node (no fence): no barrier, no lease reads", async () => {
    const store = memoryRegistryStore();
    const reg = await openProducerRegistry(store, 10);
    await reg.init("n");
    const started = performance.now();
    await reg.init("n");
    expect(performance.now() - started).toBeLessThan(leaseMs);
    expect(reg.fence()).toBeUndefined();
  });

  it("every member confirmed: answers without waiting out the lease; epoch 0 and unnamed ids ask nobody", async () => {
    const asked: Array<[string, number]> = [];
    const outcomes: string[] = [];
    const reg = await openProducerRegistry(memoryRegistryStore(), 10, Number.POSITIVE_INFINITY, {
      leaseMs: 5_000,
      nowMs: () => performance.now(),
      confirm: async (id, epoch) => {
        asked.push([id, epoch]);
        return true;
      },
      onBarrier: (o) => outcomes.push(o),
    });
    await reg.init();
    const first = await reg.init("n");
    expect(asked).toEqual([]);
    const started = performance.now();
    const second = await reg.init("n");
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(asked).toEqual([[first.id, 1]]);
    expect(second.epoch).toBe(1);
    expect(outcomes).toEqual(["confirmed"]);
  });

  it("a member that does not confirm (refuses, fails or hangs): the re-init answers after the lease, not before", async () => {
    for (const confirm of [
      async () => false,
      async () => {
        throw new Error("unreachable");
      },
      () => new Promise<boolean>(() => {}),
    ]) {
      const outcomes: string[] = [];
      const reg = await openProducerRegistry(memoryRegistryStore(), 10, Number.POSITIVE_INFINITY, {
        leaseMs,
        nowMs: () => performance.now(),
        confirm,
        onBarrier: (o) => outcomes.push(o),
      });
      await reg.init("n");
      const started = performance.now();
      await reg.init("n");
      expect(performance.now() - started).toBeGreaterThanOrEqual(barrierWaitMs(leaseMs) - 2);
      expect(outcomes).toEqual(["lease"]);
    }
  });

  it("a retried re-init answered from the stored state (no write) waits for the barrier too", async () => {
    const shared = memoryRegistryStore();
    const a = await openProducerRegistry(shared, 10);
    const first = await a.init("n");
    await a.init("n", first.epoch); // the answer of this re-init is lost
    const confirms: number[] = [];
    const b = await openProducerRegistry(shared, 10, Number.POSITIVE_INFINITY, {
      leaseMs,
      nowMs: () => performance.now(),
      confirm: async (_id, epoch) => {
        confirms.push(epoch);
        return false;
      },
    });
    const started = performance.now();
    expect(await b.init("n", first.epoch)).toEqual({ id: first.id, epoch: 1 });
    expect(confirms).toEqual([1]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(barrierWaitMs(leaseMs) - 2);
  });

  it("two re-inits of one name racing through two brokers: distinct epochs, each answered after its own barrier", async () => {
    const shared = memoryRegistryStore();
    const confirmed: number[] = [];
    const opts = (): RegistryFenceOptions => ({
      leaseMs,
      nowMs: () => performance.now(),
      confirm: async (_id, epoch) => {
        confirmed.push(epoch);
        return true;
      },
    });
    const a = await openProducerRegistry(shared, 10, Number.POSITIVE_INFINITY, opts());
    const b = await openProducerRegistry(shared, 10, Number.POSITIVE_INFINITY, opts());
    await a.init("n");
    const [x, y] = await Promise.all([a.init("n"), b.init("n")]);
    // One wrote on the other's state after a conflict: two bumps, two barriers.
    expect([x.epoch, y.epoch].sort()).toEqual([1, 2]);
    expect(confirmed.sort()).toEqual([1, 2]);
  }, 10_000);
});
