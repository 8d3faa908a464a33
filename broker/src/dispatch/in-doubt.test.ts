import { describe, expect, it } from "vitest";
import { doubtsOf, type InDoubtMarks, isInDoubt, markInDoubt, pruneInDoubt } from "./in-doubt.ts";

describe("in-doubt marks", () => {
  it("holds a seq from its first mark until the hold runs out", () => {
    const m: InDoubtMarks = new Map();
    markInDoubt(m, "L", 0, [5, 6], 1_000);
    markInDoubt(m, "L", 0, [6], 1_500); // re-marking keeps the first time
    expect(isInDoubt(m, "L", 0, 6, 1_999, 1_000)).toBe(true);
    expect(isInDoubt(m, "L", 0, 6, 2_000, 1_000)).toBe(false);
    expect(isInDoubt(m, "L", 0, 7, 1_000, 1_000)).toBe(false);
    expect(isInDoubt(m, "other", 0, 5, 1_000, 1_000)).toBe(false);
    expect(isInDoubt(m, "L", 1, 5, 1_000, 1_000)).toBe(false);
  });

  it("prunes done seqs and seqs below the checkpoint, keeps lanes a pass did not reach and parked seqs", () => {
    const m: InDoubtMarks = new Map();
    markInDoubt(m, "A", 0, [2, 3, 10, 12], 0);
    markInDoubt(m, "B", 0, [20], 0);
    pruneInDoubt(m, [{ from: 12, to: 13 }], 5, (s) => s === 2);
    expect([...(doubtsOf(m, "A", 0)?.keys() ?? [])]).toEqual([2, 10]);
    // Lane B had no records in this pass, but seq 20 is not done: it stays in doubt.
    expect([...(doubtsOf(m, "B", 0)?.keys() ?? [])]).toEqual([20]);
  });
});
