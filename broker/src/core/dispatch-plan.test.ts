import { describe, expect, it } from "vitest";
import {
  advanceCheckpoint,
  chooseSibling,
  commitRecordBytes,
  commitRecordOverheadBytes,
  type Destination,
  decideLane,
  laneKey,
  lookaheadLimit,
  type MemberState,
  nextFailures,
  nextWindowRecords,
  type PlanInput,
  planDispatch,
  type SkipSet,
  seqsToRanges,
  skipAddRanges,
  skipAddSeqs,
  skipHas,
  skipNextFree,
  skipSize,
  splitBatches,
} from "./dispatch-plan.ts";
import type { WalRecord } from "./records.ts";

const INC = "00112233aabbccdd";

function rec(seq: number, topic: string, partition: number, key = `k${seq}`, payloadBytes = 4): WalRecord {
  return {
    seq,
    topic,
    partition,
    key: Buffer.from(key),
    createdMs: 1000 + seq,
    payload: Buffer.alloc(payloadBytes),
  };
}

const windowOpts = { windowRecords: 4096, windowCapRecords: 65536, targetPerPartition: 64 };
const planOpts = { ...windowOpts, rerouteAfterPasses: 3, maxBatchBytes: 1 << 20 };

/** A static cluster: topic → owner (node, state) per partition. */
function cluster(
  topics: Record<string, Array<[string, MemberState]>>,
): Pick<PlanInput, "resolve" | "partitionCount"> {
  return {
    resolve: (topic, partition): Destination => {
      const owners = topics[topic];
      if (owners === undefined) return { kind: "topic-missing" };
      const o = owners[partition];
      if (o === undefined) throw new Error(`no partition ${topic}/${partition}`);
      return { kind: "owner", nodeId: o[0], state: o[1] };
    },
    partitionCount: (topic) => topics[topic]?.length ?? 0,
  };
}

function plan(records: WalRecord[], c: ReturnType<typeof cluster>, failures = new Map<string, number>()) {
  return planDispatch({ records, incarnation: INC, localNodeId: "n0", failures, options: planOpts, ...c });
}

/** Every seq the plan lists (held groups carry counts only), whatever the decision (invariant I1). */
function accountedSeqs(p: ReturnType<typeof plan>): number[] {
  return [
    ...p.lanes.flatMap((l) => l.batches.flatMap((b) => b.records.map((r) => r.seq))),
    ...p.reroutes.flatMap((g) => g.moves.map((m) => m.record.seq)),
    ...p.missingTopics.flatMap((m) => m.seqs),
  ];
}

describe("skip-set", () => {
  it("turns seqs into merged ranges", () => {
    expect(seqsToRanges([7, 3, 4, 5, 9, 4, 10])).toEqual([
      { from: 3, to: 6 },
      { from: 7, to: 8 },
      { from: 9, to: 11 },
    ]);
  });

  it("merges overlapping and adjacent ranges", () => {
    const s = skipAddRanges(
      [
        { from: 10, to: 12 },
        { from: 20, to: 22 },
      ],
      [
        { from: 12, to: 15 },
        { from: 18, to: 21 },
        { from: 30, to: 30 },
      ],
    );
    expect(s).toEqual([
      { from: 10, to: 15 },
      { from: 18, to: 22 },
    ]);
    expect(skipSize(s)).toBe(9);
  });

  it.each([
    [9, false, 9],
    [10, true, 15],
    [14, true, 15],
    [15, false, 15],
    [18, true, 22],
    [22, false, 22],
  ])("seq %d: has=%s, next free=%d", (seq, has, free) => {
    const s: SkipSet = [
      { from: 10, to: 15 },
      { from: 18, to: 22 },
    ];
    expect(skipHas(s, seq)).toBe(has);
    expect(skipNextFree(s, seq)).toBe(free);
  });
});

describe("advanceCheckpoint", () => {
  it.each([
    { name: "nothing done", cp: 5, done: [], want: 5, left: [] },
    { name: "contiguous run", cp: 5, done: [5, 6, 7], want: 8, left: [] },
    { name: "gap holds it", cp: 5, done: [6, 7, 9], want: 5, left: [6, 7, 9] },
    { name: "fills up to the gap", cp: 5, done: [5, 6, 8, 9], want: 7, left: [8, 9] },
    { name: "stale seqs below are pruned", cp: 5, done: [1, 2, 5], want: 6, left: [] },
    { name: "gap filled later joins runs", cp: 5, done: [5, 6, 7, 8, 9, 10], want: 11, left: [] },
  ])("$name", ({ cp, done, want, left }) => {
    const r = advanceCheckpoint(cp, skipAddSeqs([], done));
    expect(r.checkpoint).toBe(want);
    expect(r.skip).toEqual(seqsToRanges(left));
  });

  it("advances across passes as a gap is filled, pruning the skip-set", () => {
    // pass 1: seq 5 stuck, 6..100 committed.
    let st = advanceCheckpoint(5, skipAddSeqs([], range(6, 101)));
    expect(st.checkpoint).toBe(5);
    expect(skipSize(st.skip)).toBe(95);
    // pass 2: 5 commits, and 101..110 too.
    st = advanceCheckpoint(st.checkpoint, skipAddSeqs(st.skip, [5, ...range(101, 111)]));
    expect(st).toEqual({ checkpoint: 111, skip: [] });
  });

  it("never moves back", () => {
    expect(advanceCheckpoint(50, skipAddSeqs([], [3, 4])).checkpoint).toBe(50);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

describe("window and lookahead", () => {
  it.each([
    [0, 4096],
    [1, 4096],
    [64, 4096],
    [65, 4160],
    [500, 32000],
    [1024, 65536],
    [5000, 65536],
  ])("%d partitions with traffic → window %d", (parts, want) => {
    expect(nextWindowRecords(parts, windowOpts)).toBe(want);
  });

  it("lookahead stops 16 windows past the window of the stuck record", () => {
    expect(lookaheadLimit(100, 4096, 16)).toBe(100 + 17 * 4096);
    expect(lookaheadLimit(1, 10, 0)).toBe(11);
  });

  it("bounds the skip-set: nothing at or past the limit can enter it", () => {
    // The dispatcher only reads seqs below the limit, so only those can be done.
    const cp = 1;
    const limit = lookaheadLimit(cp, 8, 2);
    const done = range(cp + 1, limit); // everything but the stuck record
    const st = advanceCheckpoint(cp, skipAddSeqs([], done));
    expect(st.checkpoint).toBe(cp);
    expect(skipSize(st.skip)).toBe(limit - cp - 1);
    expect(skipSize(st.skip)).toBeLessThan(3 * 8);
  });
});

describe("decideLane", () => {
  const table: Array<[MemberState, boolean, number, string]> = [
    ["Active", false, 0, "commit"],
    ["Active", false, 7, "commit"], // membership disagrees: keep retrying
    ["Joining", false, 0, "commit"],
    ["Joining", false, 2, "commit"],
    ["Joining", false, 3, "reroute:owner-failing"],
    ["Decommissioning", false, 3, "reroute:owner-failing"],
    ["Maintenance", false, 0, "hold:maintenance"],
    ["Maintenance", false, 99, "hold:maintenance"], // never rerouted
    ["Down", false, 0, "reroute:owner-down"],
    ["Removed", false, 0, "reroute:owner-removed"],
    ["Maintenance", true, 0, "commit"], // our own partitions: always committed locally
    ["Down", true, 5, "commit"],
  ];
  it.each(table)("%s (local=%s, failed %d passes) → %s", (state, local, failed, want) => {
    const d = decideLane({ state, local }, failed, 3);
    expect(d.action === "commit" ? "commit" : `${d.action}:${d.reason}`).toBe(want);
  });
});

describe("chooseSibling", () => {
  it("is deterministic per key and spreads keys over every live sibling", () => {
    const live = [0, 2, 5];
    const counts = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const key = Buffer.from(`key-${i.toString(36)}`);
      const p = chooseSibling(key, live)!;
      expect(chooseSibling(key, live)).toBe(p);
      counts.set(p, (counts.get(p) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(live);
    for (const n of counts.values()) expect(n).toBeGreaterThan(50);
  });

  it("has nothing to choose without live siblings", () => {
    expect(chooseSibling(Buffer.from("a"), [])).toBeUndefined();
  });
});

describe("splitBatches", () => {
  it("caps batch bytes, keeps order, gives an oversized record its own batch", () => {
    const size = commitRecordBytes(rec(1, "t", 0, "k1", 100));
    const records = [rec(1, "t", 0, "k1", 100), rec(2, "t", 0, "k2", 100), rec(3, "t", 0, "k3", 5000)];
    records.push(rec(4, "t", 0, "k4", 100));
    const batches = splitBatches(records, INC, 2 * size);
    expect(batches.map((b) => b.records.map((r) => r.seq))).toEqual([[1, 2], [3], [4]]);
    expect(batches[0]!.bytes).toBe(2 * size);
    expect(batches[0]!.records[0]).toMatchObject({ incarnation: INC, seq: 1, createdMs: 1001 });
    expect(size).toBe(2 + 100 + commitRecordOverheadBytes);
  });
});

describe("planDispatch", () => {
  it("buckets by (topic, partition, owner) in seq order, carrying incarnation and seq", () => {
    const c = cluster({
      a: [
        ["n0", "Active"],
        ["n1", "Active"],
      ],
      b: [["n1", "Active"]],
    });
    const records = [rec(1, "a", 0), rec(2, "a", 1), rec(3, "b", 0), rec(4, "a", 0), rec(5, "a", 1)];
    const p = plan(records, c);
    expect(
      p.lanes.map((l) => [l.topic, l.partition, l.nodeId, l.local, l.batches[0]!.records.map((r) => r.seq)]),
    ).toEqual([
      ["a", 0, "n0", true, [1, 4]],
      ["a", 1, "n1", false, [2, 5]],
      ["b", 0, "n1", false, [3]],
    ]);
    expect(p.lanes[0]!.batches[0]!.records[0]!.incarnation).toBe(INC);
    expect(p.held).toEqual([]);
    expect(p.partitionsWithTraffic).toBe(3);
    expect(p.nextWindowRecords).toBe(4096);
  });

  it("holds a Maintenance owner's records and never reroutes them", () => {
    const c = cluster({
      a: [
        ["n1", "Maintenance"],
        ["n2", "Active"],
      ],
    });
    const failures = new Map([[laneKey("a", 0, "n1"), 10]]);
    const p = plan([rec(1, "a", 0), rec(2, "a", 1), rec(3, "a", 0)], c, failures);
    expect(p.held).toEqual([
      {
        laneKey: laneKey("a", 0, "n1"),
        topic: "a",
        partition: 0,
        nodeId: "n1",
        reason: "maintenance",
        count: 2,
        firstSeq: 1,
      },
    ]);
    expect(p.reroutes).toEqual([]);
    expect(p.lanes.map((l) => l.partition)).toEqual([1]);
  });

  it("reroutes a Down owner's records at once to live siblings, by key, in seq order", () => {
    const c = cluster({
      a: [
        ["n1", "Down"],
        ["n2", "Active"],
        ["n3", "Maintenance"],
        ["n2", "Active"],
      ],
    });
    const records = range(1, 41).map((s) => rec(s, "a", 0));
    const p = plan(records, c);
    expect(p.lanes).toEqual([]);
    expect(p.reroutes).toHaveLength(1);
    const g = p.reroutes[0]!;
    expect(g).toMatchObject({ fromPartition: 0, nodeId: "n1", reason: "owner-down" });
    expect(g.moves.map((m) => m.record.seq)).toEqual(range(1, 41));
    // Only Active siblings, never the Maintenance one or the source; both used.
    expect(new Set(g.moves.map((m) => m.toPartition))).toEqual(new Set([1, 3]));
    for (const m of g.moves) expect(m.toPartition).toBe(chooseSibling(m.record.key, [1, 3]));
  });

  it("holds in-doubt records for a Down owner and reroutes the rest (I4); a Removed owner has nothing in doubt", () => {
    const records = range(1, 11).map((s) => rec(s, "a", 0));
    const doubted = new Set([1, 2, 3]);
    const withOwner = (state: MemberState) =>
      planDispatch({
        records,
        incarnation: INC,
        localNodeId: "n0",
        failures: new Map(),
        inDoubt: (topic, partition, seq) => topic === "a" && partition === 0 && doubted.has(seq),
        options: planOpts,
        ...cluster({
          a: [
            ["n1", state],
            ["n2", "Active"],
          ],
        }),
      });
    const down = withOwner("Down");
    expect(down.held).toEqual([
      {
        laneKey: laneKey("a", 0, "n1"),
        topic: "a",
        partition: 0,
        nodeId: "n1",
        reason: "in-doubt",
        count: 3,
        firstSeq: 1,
      },
    ]);
    expect(down.reroutes[0]!.moves.map((m) => m.record.seq)).toEqual(range(4, 11));
    expect(accountedSeqs(down).length + 3).toBe(records.length); // I1: held + rerouted = all

    const removed = withOwner("Removed");
    expect(removed.held).toEqual([]);
    expect(removed.reroutes[0]!.moves.map((m) => m.record.seq)).toEqual(range(1, 11));
  });

  it("holds an idempotent producer's stamped records for a Down owner and reroutes only the plain ones", () => {
    const c = cluster({
      a: [
        ["n1", "Down"],
        ["n2", "Active"],
      ],
    });
    const records = range(1, 7).map((s) => {
      const r = rec(s, "a", 0);
      return s % 2 === 0 ? { ...r, producer: { id: "p1", epoch: 0, seq: s / 2 - 1 } } : r;
    });
    const p = plan(records, c);
    expect(p.reroutes.flatMap((g) => g.moves.map((m) => m.record.seq))).toEqual([1, 3, 5]);
    expect(p.held).toEqual([
      expect.objectContaining({ partition: 0, nodeId: "n1", reason: "idempotent", count: 3, firstSeq: 2 }),
    ]);
  });

  it("reroutes a failing owner only after enough passes and when membership agrees", () => {
    const c = cluster({
      a: [
        ["n1", "Joining"],
        ["n2", "Active"],
      ],
      b: [
        ["n1", "Active"],
        ["n2", "Active"],
      ],
    });
    const records = [rec(1, "a", 0), rec(2, "b", 0)];
    const k1 = laneKey("a", 0, "n1");
    const k2 = laneKey("b", 0, "n1");
    expect(plan(records, c, new Map([[k1, 2]])).reroutes).toEqual([]);
    const p = plan(
      records,
      c,
      new Map([
        [k1, 3],
        [k2, 9],
      ]),
    );
    expect(p.reroutes.map((g) => [g.topic, g.reason, g.moves[0]!.toPartition])).toEqual([
      ["a", "owner-failing", 1],
    ]);
    expect(p.lanes.map((l) => l.topic)).toEqual(["b"]); // Active owner: retried, not rerouted
  });

  it("holds when a reroute has no live sibling (others failing or not Active)", () => {
    const c = cluster({
      a: [
        ["n1", "Down"],
        ["n2", "Active"],
        ["n3", "Joining"],
      ],
    });
    const failures = new Map([[laneKey("a", 1, "n2"), 1]]);
    const p = plan([rec(1, "a", 0)], c, failures);
    expect(p.reroutes).toEqual([]);
    expect(p.held).toMatchObject([{ partition: 0, reason: "no-live-sibling", count: 1 }]);
  });

  it("reports a missing topic's records for a deletion check and never drops them", () => {
    const c = cluster({ a: [["n0", "Active"]] });
    const p = plan([rec(1, "gone", 0), rec(2, "a", 0), rec(3, "gone", 2)], c);
    expect(p.missingTopics).toEqual([{ topic: "gone", seqs: [1, 3] }]);
    expect(p.lanes.map((l) => l.topic)).toEqual(["a"]);
  });

  it("resolves each partition once per pass", () => {
    let calls = 0;
    const c = cluster({
      a: [
        ["n0", "Active"],
        ["n1", "Active"],
      ],
    });
    const counting = {
      ...c,
      resolve: (t: string, p: number) => {
        calls++;
        return c.resolve(t, p);
      },
    };
    plan(
      range(1, 101).map((s) => rec(s, "a", s % 2)),
      counting,
    );
    expect(calls).toBe(2);
  });

  it("grows the window with partitions that had traffic", () => {
    const owners: Array<[string, MemberState]> = range(0, 100).map(() => ["n0", "Active"]);
    const p = plan(
      range(1, 201).map((s) => rec(s, "a", s % 100)),
      cluster({ a: owners }),
    );
    expect(p.partitionsWithTraffic).toBe(100);
    expect(p.nextWindowRecords).toBe(6400);
  });

  it("accounts for every record exactly once under any mix of states (I1)", () => {
    const states: MemberState[] = ["Active", "Joining", "Maintenance", "Down", "Decommissioning", "Removed"];
    let seed = 7;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let round = 0; round < 50; round++) {
      const topics: Record<string, Array<[string, MemberState]>> = {};
      for (const t of ["x", "y"]) {
        topics[t] = range(0, 1 + rand(5)).map(() => [`n${rand(3)}`, states[rand(states.length)]!]);
      }
      const records = range(1, 1 + rand(200)).map((s) => {
        const t = ["x", "y", "z"][rand(3)]!;
        return rec(s, t, rand(topics[t]?.length ?? 3));
      });
      const failures = new Map<string, number>();
      for (const t of ["x", "y"])
        topics[t]!.forEach(([n], p) => {
          failures.set(laneKey(t, p, n), rand(5));
        });
      const p = plan(records, cluster(topics), failures);
      const heldCount = p.held.reduce((n, h) => n + h.count, 0);
      const seqs = accountedSeqs(p);
      expect(seqs.length + heldCount).toBe(records.length);
      expect(new Set(seqs).size).toBe(seqs.length);
      for (const l of p.lanes) {
        const ls = l.batches.flatMap((b) => b.records.map((r) => r.seq));
        expect(ls).toEqual([...ls].sort((a, b) => a - b)); // I2: seq order per lane
      }
    }
  });
});

describe("nextFailures", () => {
  it("counts failed lanes, resets succeeded ones, keeps unattempted ones, forgets absent ones", () => {
    const prev = new Map([
      ["failed", 2],
      ["ok", 5],
      ["held", 4],
      ["gone", 3],
    ]);
    const next = nextFailures(
      prev,
      ["failed", "ok", "held", "new-fail"],
      new Map([
        ["failed", false],
        ["ok", true],
        ["new-fail", false],
      ]),
    );
    expect([...next].sort()).toEqual([
      ["failed", 3],
      ["held", 4],
      ["new-fail", 1],
    ]);
  });
});
