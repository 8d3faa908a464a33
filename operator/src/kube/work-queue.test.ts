import { describe, expect, it } from "vitest";
import { ManualClock, settle } from "./manual-clock.ts";
import { backoffMs, WorkQueue } from "./work-queue.ts";
import { runWorkers } from "./workers.ts";

function makeQueue(clock = new ManualClock(), maxKeys = 100) {
  const dropped: string[] = [];
  const depths: number[] = [];
  const q = new WorkQueue({
    clock,
    backoffBaseMs: 100,
    backoffMaxMs: 60_000,
    maxKeys,
    onDrop: (k) => dropped.push(k),
    onDepth: (d) => depths.push(d),
  });
  return { q, clock, dropped, depths };
}

describe("WorkQueue", () => {
  it("deduplicates keys waiting in the ready list", async () => {
    const { q } = makeQueue();
    q.add("a");
    q.add("b");
    q.add("a");
    expect(q.depth).toBe(2);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
  });

  it("never hands out a key twice while it is in flight, and requeues it at done", async () => {
    const { q } = makeQueue();
    q.add("a");
    const first = await q.get();
    expect(first).toBe("a");
    q.add("a");
    q.add("a");
    expect(q.depth).toBe(0);
    q.done("a");
    expect(q.depth).toBe(1);
    expect(await q.get()).toBe("a");
    q.done("a");
    expect(q.depth).toBe(0);
  });

  it("wakes a waiting get", async () => {
    const { q } = makeQueue();
    const p = q.get();
    q.add("x");
    expect(await p).toBe("x");
  });

  it("delays keys and keeps the earliest delay", async () => {
    const { q, clock } = makeQueue();
    q.addAfter("a", 1000);
    q.addAfter("a", 5000);
    await clock.advance(999);
    expect(q.depth).toBe(0);
    await clock.advance(1);
    expect(q.depth).toBe(1);
    await clock.advance(10_000);
    expect(q.depth).toBe(1);
  });

  it("an earlier addAfter replaces a later one", async () => {
    const { q, clock } = makeQueue();
    q.addAfter("a", 5000);
    q.addAfter("a", 100);
    await clock.advance(100);
    expect(q.depth).toBe(1);
  });

  it("backs off per key exponentially from 100ms to 60s and forget resets it", async () => {
    const { q } = makeQueue();
    const delays = Array.from({ length: 12 }, () => q.addRateLimited("a"));
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(delays.at(-1)).toBe(60_000);
    expect(q.addRateLimited("b")).toBe(100);
    q.forget("a");
    expect(q.addRateLimited("a")).toBe(100);
  });

  it("bounds waiting keys and reports drops", () => {
    const { q, dropped } = makeQueue(new ManualClock(), 2);
    q.add("a");
    q.addAfter("b", 100);
    q.add("c");
    q.addAfter("d", 100);
    expect(dropped).toEqual(["c", "d"]);
    // a key already waiting (delayed) may still be made ready
    q.add("b");
    expect(q.depth).toBe(2);
  });

  it("shutDown releases waiters and drops delayed keys", async () => {
    const { q, clock } = makeQueue();
    const p = q.get();
    q.addAfter("a", 100);
    q.shutDown();
    expect(await p).toBeUndefined();
    await clock.advance(1000);
    expect(q.depth).toBe(0);
    q.add("b");
    expect(await q.get()).toBeUndefined();
    expect(clock.pendingTimers()).toBe(0);
  });

  it("reports depth", async () => {
    const { q, depths } = makeQueue();
    q.add("a");
    q.add("b");
    await q.get();
    expect(depths).toEqual([1, 2, 1]);
  });

  it("backoffMs never overflows", () => {
    expect(backoffMs(0, 100, 60_000)).toBe(0);
    expect(backoffMs(10_000, 100, 60_000)).toBe(60_000);
  });
});

describe("runWorkers", () => {
  it("runs one reconcile per key at a time, retries failures with backoff, honours requeueAfter", async () => {
    const clock = new ManualClock();
    const { q } = makeQueue(clock);
    const ac = new AbortController();
    let inFlight = 0;
    let maxInFlight = 0;
    const calls: string[] = [];
    let failuresLeft = 2;
    const results: Array<{ key: string; error: boolean; retry: number | undefined }> = [];
    const done = runWorkers(
      q,
      3,
      async (key) => {
        calls.push(key);
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await settle(1);
        inFlight--;
        if (key === "flaky" && failuresLeft-- > 0) throw new Error("boom");
        if (key === "poll" && calls.filter((c) => c === "poll").length === 1) return { requeueAfterMs: 5000 };
        return {};
      },
      ac.signal,
      { onResult: (key, _d, err, retry) => results.push({ key, error: err !== undefined, retry }) },
    );
    q.add("flaky");
    q.add("poll");
    await settle();
    q.add("flaky"); // in flight or backing off: must not run concurrently
    await clock.advance(100);
    await clock.advance(200);
    await clock.advance(5000);
    q.shutDown();
    await done;
    expect(maxInFlight).toBeLessThanOrEqual(2);
    expect(calls.filter((c) => c === "flaky").length).toBeGreaterThanOrEqual(3);
    expect(calls.filter((c) => c === "poll")).toHaveLength(2);
    const flaky = results.filter((r) => r.key === "flaky");
    expect(flaky[0]).toEqual({ key: "flaky", error: true, retry: 100 });
    expect(flaky.at(-1)?.error).toBe(false);
    expect(results.find((r) => r.key === "poll")?.retry).toBe(5000);
  });
});
