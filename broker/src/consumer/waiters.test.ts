import { describe, expect, it } from "vitest";
import { WaiterSet } from "./waiters.ts";

describe("WaiterSet", () => {
  it("wakes waiters of the partition (or any partition) and of the group when named", async () => {
    const w = new WaiterSet(10);
    const v = w.version("t");
    const p0 = w.wait("t", "g", 0, 5_000, v);
    const any = w.wait("t", "g", undefined, 5_000, v);
    const p1 = w.wait("t", "g", 1, 50, v);
    const other = w.wait("t", "h", 0, 50, v);
    expect(w.size).toBe(4);
    w.wake("t", 0, "g");
    expect(await p0).toBe("woken");
    expect(await any).toBe("woken");
    expect(await p1).toBe("timeout");
    expect(await other).toBe("timeout");
    expect(w.size).toBe(0);
  });

  it("returns at once when the topic was woken since the caller's snapshot (no lost wakeup)", async () => {
    const w = new WaiterSet(10);
    const v = w.version("t");
    w.wake("t", 3);
    expect(await w.wait("t", "g", 0, 5_000, v)).toBe("woken");
  });

  it("is bounded, stops on abort, and close resolves everyone", async () => {
    const w = new WaiterSet(2);
    const ac = new AbortController();
    const a = w.wait("t", "g", 0, 5_000, 0, ac.signal);
    const b = w.wait("t", "g", 0, 5_000, 0);
    expect(w.hasRoom()).toBe(false);
    expect(await w.wait("t", "g", 0, 5_000, 0)).toBe("timeout");
    ac.abort();
    expect(await a).toBe("closed");
    w.close();
    expect(await b).toBe("closed");
    expect(await w.wait("t", "g", 0, 5_000, 0)).toBe("closed");
  });

  it("remembers versions of a bounded number of topics, and an eviction never loses a wake-up (issue #13 item 10)", async () => {
    const w = new WaiterSet(10, 8);
    // Topic churn: 10,000 topics woken once each (created, used, deleted).
    for (let i = 0; i < 10_000; i++) w.wake(`t${i}`, 0);
    expect(w.trackedTopics).toBe(8);
    // A consumer snapshots x, x is woken and then evicted by churn: wait() still sees the wake.
    const before = w.version("x");
    w.wake("x", 0);
    for (let i = 0; i < 100; i++) w.wake(`u${i}`, 0);
    expect(w.trackedTopics).toBe(8);
    expect(await w.wait("x", "g", 0, 1_000, before)).toBe("woken");
    // Without a wake in between, a snapshot of a tracked topic still sleeps until its deadline.
    const v = w.version("u99");
    expect(await w.wait("u99", "g", 0, 20, v)).toBe("timeout");
  });
});
