import { describe, expect, it } from "vitest";
import type { CommitBatch, CommitLane } from "../core/dispatch-plan.ts";
import type { CommitResult } from "../log/types.ts";
import { commitLanes, settleWithin } from "./commit-runner.ts";

function lane(key: string, batches: number[][]): CommitLane {
  const bs: CommitBatch[] = batches.map((seqs) => ({
    bytes: 0,
    records: seqs.map((seq) => ({
      key: Buffer.from("k"),
      payload: Buffer.from("p"),
      createdMs: 0,
      incarnation: "0123456789abcdef",
      seq,
    })),
  }));
  return {
    key,
    topic: "t",
    partition: 0,
    nodeId: "n",
    local: false,
    batches: bs,
    records: batches.flat().length,
  };
}

const ok = (b: CommitBatch): CommitResult => ({ baseOffset: 0, appended: b.records.length, duplicates: 0 });
const base = { timeoutMs: 1000, nowMs: () => Date.now(), signal: new AbortController().signal };

describe("commitLanes", () => {
  it("runs at most `fanout` lanes at once", async () => {
    let inFlight = 0;
    let peak = 0;
    const lanes = Array.from({ length: 10 }, (_, i) => lane(`l${i}`, [[i]]));
    const res = await commitLanes(lanes, {
      ...base,
      fanout: 3,
      commit: async (_l, b) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 3));
        inFlight--;
        return ok(b);
      },
    });
    expect(peak).toBe(3);
    expect(res.every((r) => r.ok)).toBe(true);
  });

  it("commits a lane's batches in order and stops at the first failure", async () => {
    const sent: number[][] = [];
    const [r] = await commitLanes([lane("l", [[1, 2], [3], [4]])], {
      ...base,
      fanout: 4,
      commit: async (_l, b) => {
        sent.push(b.records.map((x) => x.seq));
        if (b.records[0]!.seq === 3) throw new Error("boom");
        return ok(b);
      },
    });
    expect(sent).toEqual([[1, 2], [3]]);
    expect(r).toMatchObject({ ok: false, committedSeqs: [1, 2], appended: 2, failure: { outcome: "error" } });
  });

  it("times out a hung batch and treats a short acknowledgement as a failure", async () => {
    const res = await commitLanes([lane("hang", [[1]]), lane("short", [[2, 3]])], {
      ...base,
      timeoutMs: 10,
      fanout: 2,
      commit: (l) =>
        l.key === "hang"
          ? new Promise<CommitResult>(() => {})
          : Promise.resolve({ baseOffset: 0, appended: 1, duplicates: 0 }),
    });
    expect(res.map((r) => [r.ok, r.failure?.outcome, r.committedSeqs])).toEqual([
      [false, "timeout", []],
      [false, "error", []],
    ]);
  });

  it("counts duplicates as acknowledged", async () => {
    const [r] = await commitLanes([lane("l", [[1, 2]])], {
      ...base,
      fanout: 1,
      commit: async () => ({ baseOffset: -1, appended: 0, duplicates: 2 }),
    });
    expect(r).toMatchObject({ ok: true, committedSeqs: [1, 2], duplicates: 2 });
  });
});

describe("settleWithin", () => {
  it("resolves aborted when the signal fires", async () => {
    const ac = new AbortController();
    const p = settleWithin(new Promise(() => {}), 10_000, ac.signal);
    ac.abort();
    expect(await p).toEqual({ kind: "aborted" });
  });
});
