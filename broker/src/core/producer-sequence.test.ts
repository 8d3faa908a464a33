import { describe, expect, it } from "vitest";
import { ProducerSequences } from "./producer-sequence.ts";

const s = (seq: number, epoch = 0, id = "p-1") => ({ id, epoch, seq });

/** Commits seqs [from, to] as one batch at offsets base.., fingerprint = seq. */
function commitRun(
  d: ProducerSequences,
  from: number,
  to: number,
  base: number,
  commitId: number,
  epoch = 0,
) {
  for (let q = from; q <= to; q++) d.commit(s(q, epoch), base + (q - from), q, commitId, 0);
}

describe("ProducerSequences", () => {
  it("accepts the next sequence, answers an exact retry with its original offset", () => {
    const d = new ProducerSequences();
    expect(d.check(s(0), 0)).toEqual({ kind: "fresh" });
    commitRun(d, 0, 2, 100, 1);
    expect(d.check(s(3), 3)).toEqual({ kind: "fresh" });
    expect(d.check(s(1), 1)).toEqual({ kind: "duplicate", offset: 101 });
    expect(d.check(s(0), 0)).toEqual({ kind: "duplicate", offset: 100 });
  });

  it("refuses a gap, and a remembered seq with other content (a reused identity)", () => {
    const d = new ProducerSequences();
    commitRun(d, 0, 3, 0, 1);
    expect(d.check(s(5), 5)).toEqual({ kind: "out_of_order", expectedSeq: 4, epoch: 0 });
    expect(d.check(s(0), 999)).toEqual({ kind: "out_of_order", expectedSeq: 4, epoch: 0 });
  });

  it("keeps the results of the latest 5 batches only; older seqs are out of order, not duplicates", () => {
    const d = new ProducerSequences();
    for (let b = 0; b < 7; b++) commitRun(d, b * 10, b * 10 + 9, b * 10, b + 1);
    expect(d.check(s(25), 25)).toEqual({ kind: "duplicate", offset: 25 }); // batch 3 of 7: kept
    expect(d.check(s(15), 15).kind).toBe("out_of_order"); // batch 2: forgotten
    expect(d.check(s(5), 5).kind).toBe("out_of_order");
  });

  it("a seq far below the highest is never taken as a duplicate of nothing (the old 1,024 window)", () => {
    const d = new ProducerSequences();
    // batch k+1 (seqs 1000..1999) arriving before batch k (0..999) is refused, never taken as a duplicate.
    expect(d.check(s(1000), 1000)).toEqual({ kind: "out_of_order", expectedSeq: 0, epoch: 0 });
    commitRun(d, 0, 999, 0, 1);
    expect(d.check(s(1000), 1000)).toEqual({ kind: "fresh" });
    commitRun(d, 1000, 1999, 1000, 2);
    expect(d.check(s(0), 0)).toEqual({ kind: "duplicate", offset: 0 }); // still remembered (2 batches)
    expect(d.check(s(2000 - 1024), 976)).toEqual({ kind: "duplicate", offset: 976 });
  });

  it("fences a lower epoch, from the state or from the registry; a new epoch starts at 0", () => {
    const d = new ProducerSequences();
    commitRun(d, 0, 4, 0, 1, 1);
    expect(d.check(s(5, 0), 5)).toEqual({ kind: "fenced", currentEpoch: 1 });
    expect(d.check(s(5, 1), 5, 2)).toEqual({ kind: "fenced", currentEpoch: 2 });
    expect(d.check(s(0, 2), 0)).toEqual({ kind: "fresh" });
    expect(d.check(s(3, 2), 3).kind).toBe("out_of_order");
    // Registry knows a newer epoch for a producer this partition never saw.
    expect(d.check(s(0, 0, "p-9"), 0, 1)).toEqual({ kind: "fenced", currentEpoch: 1 });
  });

  it("checkBatch sees the records before it in the same commit", () => {
    const d = new ProducerSequences();
    commitRun(d, 0, 1, 0, 1);
    const v = d.checkBatch([
      { stamp: s(2), fingerprint: 2 },
      { stamp: s(3), fingerprint: 3 },
      { stamp: s(2), fingerprint: 2 }, // retry of the first, in the same commit
      { stamp: s(1), fingerprint: 1 }, // retry of a committed one
      { stamp: s(9), fingerprint: 9 }, // gap
      { stamp: s(4), fingerprint: 4 },
    ]);
    expect(v).toEqual([
      { kind: "fresh" },
      { kind: "fresh" },
      { kind: "duplicate_in_batch", index: 0 },
      { kind: "duplicate", offset: 1 },
      { kind: "out_of_order", expectedSeq: 4, epoch: 0 },
      { kind: "fresh" },
    ]);
    // Nothing changed until commit.
    expect(d.check(s(2), 2)).toEqual({ kind: "fresh" });
  });

  it("bounds producers: the least recently used is evicted beyond maxProducers, idle ones by time", () => {
    const d = new ProducerSequences({ maxProducers: 2, idleEvictMs: 1000 });
    expect(d.check(s(5, 0, "a"), 5)).toEqual({ kind: "out_of_order", expectedSeq: 0, epoch: 0 }); // unknown: starts at 0
    d.commit(s(0, 0, "a"), 0, 0, 1, 0);
    d.commit(s(0, 0, "b"), 1, 0, 1, 0);
    d.commit(s(1, 0, "a"), 2, 1, 2, 500);
    d.commit(s(0, 0, "c"), 3, 0, 3, 600);
    expect(d.size).toBe(2);
    expect(d.epochOf("b")).toBeUndefined();
    expect(d.evictIdle(1550)).toBe(1); // a used at 500, c at 600
    expect(d.epochOf("a")).toBeUndefined();
    expect(d.epochOf("c")).toBe(0);
    expect(d.evicted).toBe(2);
  });

  it("bounds remembered records per producer", () => {
    const d = new ProducerSequences({ maxRememberedRecords: 10 });
    commitRun(d, 0, 24, 0, 1);
    expect(d.check(s(14), 14).kind).toBe("out_of_order");
    expect(d.check(s(15), 15)).toEqual({ kind: "duplicate", offset: 15 });
  });
});
