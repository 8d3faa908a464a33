import { describe, expect, it } from "vitest";
import { CommitWaiters } from "./commit-waiters.ts";

describe("CommitWaiters", () => {
  it("settles waiters from commit outcomes", async () => {
    const w = new CommitWaiters();
    const disarm = w.arm();
    const p = w.wait(1, 2, 5_000);
    w.notify(1, 10);
    w.notify(2, 11);
    expect(await p).toEqual([10, 11]);
    disarm();
    expect(w.waiting).toBe(0);
  });

  it("stops waiting, and drops its waiters, when the signal aborts (the client hung up)", async () => {
    const w = new CommitWaiters();
    const ac = new AbortController();
    const started = Date.now();
    const p = w.wait(1, 1000, 60_000, ac.signal);
    expect(w.waiting).toBe(1000);
    setTimeout(() => ac.abort(), 20);
    const out = await p;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(out.every((o) => o === undefined)).toBe(true);
    expect(w.waiting).toBe(0);
    // Already aborted: returns at once.
    expect(await w.wait(5, 5, 60_000, ac.signal)).toEqual([undefined]);
  });
});
