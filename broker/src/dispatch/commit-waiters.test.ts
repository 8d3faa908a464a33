import { describe, expect, it } from "vitest";
import { CommitWaiters, withCommitWaiters } from "./commit-waiters.ts";
import type { Destinations } from "./types.ts";

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

describe("withCommitWaiters", () => {
  it("passes the topic uid through to resolve and the deletion check (a dropped uid commits into a namesake)", async () => {
    const calls: Array<[string, ...unknown[]]> = [];
    const inner = {
      localNodeId: "n0",
      resolve: (...a: unknown[]) => {
        calls.push(["resolve", ...a]);
        return { kind: "topic-missing" as const };
      },
      partitionCount: () => 1,
      confirmTopicDeleted: async (...a: unknown[]) => {
        calls.push(["confirm", ...a]);
        return true;
      },
      commit: async () => ({ baseOffset: 0, appended: 0, duplicates: 0 }),
    } as unknown as Destinations;
    const wrapped = withCommitWaiters(inner, new CommitWaiters());
    wrapped.resolve("t", 2, "uid-old");
    await wrapped.confirmTopicDeleted("t", "uid-old");
    expect(calls).toEqual([
      ["resolve", "t", 2, "uid-old"],
      ["confirm", "t", "uid-old"],
    ]);
  });
});
