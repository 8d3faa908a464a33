import { describe, expect, it } from "vitest";
import { seqsToRanges } from "../core/dispatch-plan.ts";
import { createFakeWal } from "../testing/fake-wal.ts";
import { readWindow } from "./window-reader.ts";

const base = { windowRecords: 10, skip: [], maxReadBytes: 1 << 20, maxPassBytes: 1 << 20 };

describe("readWindow", () => {
  it("stops at the window size", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 25);
    const r = await readWindow(wal, { ...base, from: 1, limit: 1000 });
    expect(r.records.map((x) => x.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(r.stoppedBy).toBe("window");
  });

  it("filters done seqs and jumps over done runs without reading them", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 200);
    const skip = seqsToRanges([2, 3, ...Array.from({ length: 150 }, (_, i) => 5 + i)]);
    const r = await readWindow(wal, { ...base, skip, from: 1, limit: 1000 });
    expect(r.records.map((x) => x.seq)).toEqual([1, 4, 155, 156, 157, 158, 159, 160, 161, 162]);
    expect(wal.readCalls).toBe(2);
  });

  it("never returns a seq at or past the limit", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 50);
    const r = await readWindow(wal, { ...base, windowRecords: 100, from: 1, limit: 31 });
    expect(r.records.at(-1)!.seq).toBe(30);
    expect(r.stoppedBy).toBe("limit");
  });

  it("reports seqs the WAL skipped as absent", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 8);
    wal.dropSeqs([1, 4, 5]);
    const r = await readWindow(wal, { ...base, from: 1, limit: 100 });
    expect(r.records.map((x) => x.seq)).toEqual([2, 3, 6, 7, 8]);
    expect(r.absent).toEqual([
      { from: 1, to: 2 },
      { from: 4, to: 6 },
    ]);
    expect(r.stoppedBy).toBe("end");
  });

  it("reports missing seqs at the durable end as absent (a torn tail's seq is never reused)", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 6);
    wal.dropSeqs([5, 6]);
    const r = await readWindow(wal, { ...base, from: 5, limit: 100 });
    expect(r.records).toEqual([]);
    expect(r.absent).toEqual([{ from: 5, to: 7 }]);
  });

  it("reports a gap wider than the limit as absent (the checkpoint must be able to pass it)", async () => {
    // A WAL whose first retained seq is far above the checkpoint (a reset
    // checkpoint over deleted segments, a lost segment): the first record
    // read is past the limit, and the gap below the limit does not exist.
    const wal = createFakeWal();
    wal.put("a", 0, 300);
    wal.dropSeqs(Array.from({ length: 250 }, (_, i) => i + 1));
    const r = await readWindow(wal, { ...base, from: 1, limit: 100 });
    expect(r.records).toEqual([]);
    expect(r.absent).toEqual([{ from: 1, to: 100 }]);
    expect(r.stoppedBy).toBe("limit");
  });

  it("stops at the pass byte budget but always takes one record", async () => {
    const wal = createFakeWal();
    wal.put("a", 0, 5, 100); // 102 bytes each (key k<n> + payload)
    const r = await readWindow(wal, { ...base, maxReadBytes: 50, maxPassBytes: 250, from: 1, limit: 100 });
    expect(r.records.map((x) => x.seq)).toEqual([1, 2, 3]);
    expect(r.stoppedBy).toBe("bytes");
  });
});
