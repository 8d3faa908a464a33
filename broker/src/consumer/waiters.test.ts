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
});
