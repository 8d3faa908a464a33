import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFakeDestinations, type FakeDestinations } from "../testing/fake-destinations.ts";
import { createFakeWal, type FakeWal } from "../testing/fake-wal.ts";
import { createDispatcher } from "./dispatcher.ts";
import { openParkedStore, type ParkedStore } from "./parked-store.ts";
import {
  type Dispatcher,
  type DispatcherOptions,
  type DispatchLogger,
  noopDispatchMetrics,
} from "./types.ts";

// Small values so the suite runs in well under a second per test.
const opts: DispatcherOptions = {
  idlePollMs: 2,
  windowRecords: 64,
  windowCapRecords: 1024,
  targetPerPartition: 16,
  lookaheadWindows: 16,
  rerouteAfterPasses: 3,
  commitTimeoutMs: 40,
  errorBackoffMs: 15,
  commitFanout: 4,
  maxBatchBytes: 64 * 1024,
};

const quiet: DispatchLogger = { debug() {}, info() {}, warn() {}, error() {} };

interface Rig {
  wal: FakeWal;
  dest: FakeDestinations;
  d: Dispatcher;
}

let running: Dispatcher[] = [];
/** Checkpoint writes that would have passed an uncommitted record (the dispatcher would only see an error). */
let violations: string[] = [];
afterEach(async () => {
  await Promise.all(running.map((d) => d.stop()));
  running = [];
  const v = violations;
  violations = [];
  expect(v).toEqual([]);
});

/**
 * Builds a dispatcher over fakes and checks, at every checkpoint write, that
 * every seq below it is accounted for: stored in some log (by its key, which
 * survives a reroute's new seq), or deliberately discarded.
 */
function rig(
  o: Partial<DispatcherOptions> = {},
  discardable: (seq: number) => boolean = () => false,
  parked?: ParkedStore,
): Rig {
  const wal = createFakeWal();
  const dest = createFakeDestinations("n0");
  const setCheckpoint = wal.setCheckpoint.bind(wal);
  wal.setCheckpoint = async (n) => {
    const stored = new Set(dest.allKeys());
    for (let s = wal.stats().checkpoint; s < n; s++) {
      const r = wal.record(s);
      if (r === undefined || discardable(s)) continue; // absent (dropped frame) or confirmed deleted
      if (parked?.has(s) === true) continue; // durable in the parked store
      if (stored.has(r.key.toString())) continue;
      // A rerouted record is done once its copy (same key, higher seq) is in the WAL.
      let copied = false;
      for (let q = s + 1; q < wal.stats().nextSeq && !copied; q++) {
        copied = wal.record(q)?.key.toString() === r.key.toString();
      }
      if (!copied) {
        violations.push(`checkpoint ${n} passes seq ${s}, which is not committed`);
        throw new Error(violations.at(-1));
      }
    }
    return setCheckpoint(n);
  };
  const d = createDispatcher({
    wal,
    destinations: dest,
    incarnation: wal.incarnation,
    options: { ...opts, ...o },
    logger: quiet,
    nowMs: () => Date.now(),
    ...(parked !== undefined ? { parked } : {}),
  });
  running.push(d);
  return { wal, dest, d };
}

async function until(cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 2));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function expectExactlyOnce(dest: FakeDestinations, keys: string[]): void {
  const got = dest.allKeys().sort();
  expect(got).toEqual([...keys].sort());
}

const keysOf = (seqs: number[]): string[] => seqs.map((s) => `k${s}`);

describe("dispatcher", () => {
  it("moves records to their partitions in seq order and advances the checkpoint", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n0", "n1", "n0"]);
    dest.addTopic("b", ["n1"]);
    const seqs: Record<string, number[]> = { a0: [], a1: [], a2: [], b0: [] };
    for (let i = 0; i < 50; i++) {
      seqs.a0!.push(...wal.put("a", 0));
      seqs.a1!.push(...wal.put("a", 1, 2));
      seqs.a2!.push(...wal.put("a", 2));
      seqs.b0!.push(...wal.put("b", 0));
    }
    d.start();
    expect(await d.drain(3000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(seqs.a0);
    expect(dest.seqs("a", 1)).toEqual(seqs.a1);
    expect(dest.seqs("a", 2)).toEqual(seqs.a2);
    expect(dest.seqs("b", 0)).toEqual(seqs.b0);
    expect(
      dest.commitCalls.every(
        (c) => c.nodeId === (c.topic === "a" && c.partition === 1 ? "n1" : c.topic === "b" ? "n1" : "n0"),
      ),
    ).toBe(true);
    const s = d.stats();
    expect(s).toMatchObject({
      committedRecords: 250,
      pendingRecords: 0,
      checkpoint: 251,
      skipSetRecords: 0,
      errors: 0,
    });
    expect(wal.checkpoints.at(-1)).toBe(251);
  });

  it("wakes on onDurable for records appended while idle", async () => {
    const { wal, dest, d } = rig({ idlePollMs: 10_000 });
    dest.addTopic("a", ["n0"]);
    d.start();
    await sleep(5);
    const seqs = wal.put("a", 0, 3);
    await until(() => dest.seqs("a", 0).length === 3, 1000);
    expect(dest.seqs("a", 0)).toEqual(seqs);
  });

  it("does not move the checkpoint before the commit is acknowledged", async () => {
    const { wal, dest, d } = rig({ commitTimeoutMs: 10_000 });
    dest.addTopic("a", ["n1"]);
    dest.setBehaviour({ nodeId: "n1" }, "hang");
    wal.put("a", 0, 5);
    d.start();
    await until(() => dest.hungCount === 1);
    await sleep(20);
    expect(wal.checkpoints).toEqual([]);
    expect(d.stats().checkpoint).toBe(1);
    dest.releaseHung();
    await until(() => d.stats().checkpoint === 6);
    expect(wal.checkpoints).toEqual([6]);
  });

  it("holds the checkpoint at a failing partition while others progress, then recovers with no loss or duplicates", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    dest.setBehaviour({ nodeId: "n1" }, "error");
    const all: number[] = [];
    const p0: number[] = [];
    for (let i = 0; i < 30; i++) {
      p0.push(...wal.put("a", 0));
      all.push(p0.at(-1)!, ...wal.put("a", 1, 3));
    }
    d.start();
    await until(() => dest.seqs("a", 1).length === 90);
    await until(() => d.stats().skipSetRecords === 90); // every p1 seq: all above the first p0 seq
    expect(d.stats().checkpoint).toBe(p0[0]);
    expect(wal.stats().checkpoint).toBe(p0[0]);
    expect(dest.seqs("a", 0)).toEqual([]);
    expect(d.stats().errors).toBeGreaterThan(0);
    // More traffic while failing still flows to p1.
    all.push(...wal.put("a", 1, 10));
    await until(() => dest.seqs("a", 1).length === 100);

    dest.setBehaviour({ nodeId: "n1" }, "ok");
    expect(await d.drain(3000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(p0); // all of them, once, in order
    expectExactlyOnce(dest, keysOf(all));
    expect(d.stats()).toMatchObject({
      checkpoint: wal.stats().nextSeq,
      skipSetRecords: 0,
      pendingRecords: 0,
    });
    // The failing owner was retried, never rerouted: membership says Active.
    expect(d.stats().reroutedRecords).toBe(0);
  });

  it("holds records for a Maintenance owner without trying it, and never reroutes them", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    dest.setMember("n1", "Maintenance");
    const held = wal.put("a", 0, 5);
    const other = wal.put("a", 1, 5);
    d.start();
    await until(() => dest.seqs("a", 1).length === 5);
    await sleep(60); // several passes
    expect(dest.commitCalls.filter((c) => c.nodeId === "n1")).toEqual([]);
    expect(d.stats()).toMatchObject({ heldRecords: 5, reroutedRecords: 0, checkpoint: 1 });
    expect(wal.stats().nextSeq).toBe(11); // no reroute copies appended

    dest.setMember("n1", "Active");
    expect(await d.drain(3000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(held);
    expectExactlyOnce(dest, keysOf([...held, ...other]));
  });

  it("still commits its own partitions when this node is in Maintenance (its drain must finish)", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n0"]);
    dest.setMember("n0", "Maintenance");
    const seqs = wal.put("a", 0, 4);
    d.start();
    expect(await d.drain(2000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(seqs);
  });

  it("reroutes a Down owner's records at once to live siblings, keeping every record exactly once", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0", "n2", "n3"]);
    dest.setMember("n1", "Down");
    dest.setMember("n3", "Maintenance");
    const moved = wal.put("a", 0, 40);
    const stay = wal.put("a", 1, 5);
    d.start();
    expect(await d.drain(3000)).toBe(true);
    expect(dest.commitCalls.filter((c) => c.nodeId === "n1" || c.nodeId === "n3")).toEqual([]);
    expect(dest.seqs("a", 0)).toEqual([]);
    expect(dest.seqs("a", 3)).toEqual([]);
    // Spread over both live siblings (1 and 2), by key.
    expect(dest.seqs("a", 1).length).toBeGreaterThan(5);
    expect(dest.seqs("a", 2).length).toBeGreaterThan(0);
    expectExactlyOnce(dest, keysOf([...moved, ...stay]));
    expect(d.stats().reroutedRecords).toBe(40);
    // The copies are new WAL records (new seqs above everything the siblings
    // had), so the owners' highest-seq dedup cannot mistake them for duplicates.
    expect(Math.min(...dest.seqs("a", 2))).toBeGreaterThan(45);
  });

  it("reroutes a failing owner after rerouteAfterPasses only when membership agrees it is not Active", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    dest.setBehaviour({ nodeId: "n1" }, "refuse");
    const seqs = wal.put("a", 0, 3);
    d.start();
    await until(() => dest.commitCalls.filter((c) => c.nodeId === "n1").length >= 5);
    expect(d.stats().reroutedRecords).toBe(0); // Active: retried, not rerouted

    dest.setMember("n1", "Joining");
    expect(await d.drain(3000)).toBe(true);
    expect(d.stats().reroutedRecords).toBe(3);
    expectExactlyOnce(dest, keysOf(seqs));
    expect(dest.seqs("a", 1)).toHaveLength(3);
  });

  it("never reroutes records whose commit failed without an answer: held for the owner, whose dedup drops what it stored", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    // n1 stores the first batch and dies before answering.
    dest.setBehaviour({ nodeId: "n1" }, "lost-answer");
    const doubted = wal.put("a", 0, 5);
    d.start();
    await until(() => dest.commitCalls.some((c) => c.nodeId === "n1"));
    dest.setBehaviour({ nodeId: "n1" }, "refuse"); // restarting: connection refused from now on
    dest.setMember("n1", "Down");
    const later = wal.put("a", 0, 5);
    // Rerouted = copied into the WAL; the copies reach the sibling in a later pass.
    await until(
      () => d.stats().reroutedRecords === 5 && d.stats().heldRecords === 5 && dest.seqs("a", 1).length === 5,
    );
    expect(dest.seqs("a", 0)).toEqual(doubted); // n1 has the in-doubt ones, not acknowledged
    await sleep(60);
    expect(d.stats().reroutedRecords).toBe(5); // still held

    // n1 is back: the held records go to it and its dedup acknowledges them without appending.
    dest.setBehaviour({ nodeId: "n1" }, "ok");
    dest.setMember("n1", "Active");
    expect(await d.drain(3000)).toBe(true);
    expectExactlyOnce(dest, keysOf([...doubted, ...later]));
    expect(dest.seqs("a", 0)).toEqual(doubted);
  });

  it("keeps in-doubt records held when a move swaps the owner: the doubt belongs to the partition (F3)", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    // n1 stores the first batch and dies before answering.
    dest.setBehaviour({ nodeId: "n1" }, "lost-answer");
    const doubted = wal.put("a", 0, 5);
    d.start();
    await until(() => dest.commitCalls.some((c) => c.nodeId === "n1"));
    dest.setBehaviour({ nodeId: "n1" }, "refuse");
    // A move hands partition 0 (with the records n1 stored) to n2, which is then Down.
    dest.addTopic("a", ["n2", "n0"]);
    dest.setBehaviour({ nodeId: "n2" }, "refuse");
    dest.setMember("n2", "Down");
    const later = wal.put("a", 0, 5);
    await until(() => d.stats().reroutedRecords === 5 && dest.seqs("a", 1).length === 5);
    await sleep(60);
    // Still held: rerouting them would store them a second time next to the copies that moved.
    expect(d.stats().reroutedRecords).toBe(5);
    expect(d.stats().heldRecords).toBe(5);
    dest.setBehaviour({ nodeId: "n2" }, "ok");
    dest.setMember("n2", "Active");
    expect(await d.drain(3000)).toBe(true);
    expectExactlyOnce(dest, keysOf([...doubted, ...later]));
    expect(dest.seqs("a", 0)).toEqual(doubted);
  });

  it("keeps a lane's in-doubt seqs when a shrinking window no longer reaches them (issue #13 item 6)", async () => {
    // Lookahead 0: a pass reads [checkpoint, checkpoint + window). The window
    // grows with the partitions of the last pass and shrinks back; one held
    // record pins the checkpoint, so the in-doubt lane falls out of reach.
    const { wal, dest, d } = rig({
      windowRecords: 8,
      windowCapRecords: 64,
      targetPerPartition: 8,
      lookaheadWindows: 0,
    });
    dest.addTopic("a", ["n1", "n2", "n0", "n0", "n0", "n0", "n0", "n0", "n0"]);
    dest.setMember("n2", "Maintenance");
    dest.setBehaviour({ nodeId: "n1" }, "lost-answer");
    const pinned = wal.put("a", 1, 1);
    const spread: number[] = [];
    for (let p = 2; p <= 8; p++) spread.push(...wal.put("a", p, 1));
    // Pass 1 (window 8) sees 8 partitions → window 64; pass 2 reaches seqs
    // 31, 32 of the in-doubt lane and sees 3 partitions → window 24, which
    // from the pinned checkpoint no longer reaches them.
    const filler = wal.put("a", 2, 23);
    const doubted = wal.put("a", 0, 2);
    d.start();
    await until(() => dest.commitCalls.some((c) => c.nodeId === "n1"));
    dest.setBehaviour({ nodeId: "n1" }, "refuse");
    dest.setMember("n1", "Down");
    await until(() => filler.every((s) => dest.allKeys().includes(`k${s}`)));
    await sleep(100); // passes that see only the pinned record: the window shrinks to 8
    dest.setMember("n2", "Active");
    await until(() => dest.seqs("a", 1).length === 1);
    await sleep(150);
    // The in-doubt records are held for n1, not copied to a sibling next to the copy n1 stored.
    expect(d.stats().reroutedRecords).toBe(0);
    dest.setBehaviour({ nodeId: "n1" }, "ok");
    dest.setMember("n1", "Active");
    expect(await d.drain(3000)).toBe(true);
    expectExactlyOnce(dest, keysOf([...pinned, ...spread, ...filler, ...doubted]));
  });

  it("reroutes in-doubt records once their hold expires, and counts them", async () => {
    let expired = 0;
    const wal = createFakeWal();
    const dest = createFakeDestinations("n0");
    const d = createDispatcher({
      wal,
      destinations: dest,
      incarnation: wal.incarnation,
      options: { ...opts, inDoubtHoldMs: 1_000 },
      logger: quiet,
      nowMs: () => Date.now(),
      metrics: { ...noopDispatchMetrics, inDoubtExpired: (n) => (expired += n) },
    });
    running.push(d);
    dest.addTopic("a", ["n1", "n0"]);
    dest.setBehaviour({ nodeId: "n1" }, "error");
    const seqs = wal.put("a", 0, 4);
    d.start();
    await until(() => dest.commitCalls.some((c) => c.nodeId === "n1"));
    dest.setMember("n1", "Down");
    await until(() => d.stats().heldRecords === 4);
    expect(d.stats().reroutedRecords).toBe(0);
    expect(await d.drain(5000)).toBe(true);
    expect(d.stats().reroutedRecords).toBe(4);
    expect(expired).toBe(4);
    expect(dest.seqs("a", 1)).toHaveLength(4);
    expectExactlyOnce(dest, keysOf(seqs)); // "error" stored nothing at n1: one copy each
  });

  it("holds records for a partition frozen by a move without counting toward a reroute", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1", "n0"]);
    dest.setMember("n1", "Decommissioning");
    dest.setBehaviour({ nodeId: "n1" }, "frozen");
    const seqs = wal.put("a", 0, 3);
    d.start();
    await until(() => dest.commitCalls.filter((c) => c.nodeId === "n1").length >= 5);
    // A failing Decommissioning owner would be rerouted after 3 passes; a frozen one is waited for.
    expect(d.stats().reroutedRecords).toBe(0);
    dest.setBehaviour({ nodeId: "n1" }, "ok");
    expect(await d.drain(5000)).toBe(true);
    expect(d.stats().reroutedRecords).toBe(0);
    expectExactlyOnce(dest, keysOf(seqs));
    expect(dest.seqs("a", 0)).toHaveLength(3);
  });

  it("keeps a missing topic's records until confirmTopicDeleted says true", async () => {
    const wal0: { gone: Set<number> } = { gone: new Set() };
    const { wal, dest, d } = rig({}, (s) => wal0.gone.has(s));
    dest.addTopic("a", ["n0"]);
    const gone = wal.put("gone", 0, 3);
    for (const s of gone) wal0.gone.add(s);
    const kept = wal.put("a", 0, 3);
    dest.confirmDeletion = false;
    d.start();
    await until(() => dest.confirmCalls.length >= 2 && dest.seqs("a", 0).length === 3);
    expect(d.stats().checkpoint).toBe(1);

    dest.confirmDeletion = "throw"; // API server unreachable: still kept
    const errorsBefore = d.stats().errors;
    await until(() => d.stats().errors > errorsBefore);
    expect(d.stats().checkpoint).toBe(1);

    dest.confirmDeletion = true;
    expect(await d.drain(3000)).toBe(true);
    expectExactlyOnce(dest, keysOf(kept));
    expect(dest.confirmCalls.every((t) => t === "gone")).toBe(true);
  });

  it("retries a commit that hangs past the timeout; the late landing is deduped, not duplicated", async () => {
    // A long backoff: after the first timeout the loop sleeps, so exactly one
    // abandoned commit is in flight when the test lands it.
    const { wal, dest, d } = rig({ commitTimeoutMs: 20, errorBackoffMs: 300 });
    dest.addTopic("a", ["n1", "n0"]);
    dest.setBehaviour({ nodeId: "n1" }, "hang");
    const first = wal.put("a", 0, 4);
    d.start();
    await until(() => d.stats().errors >= 1 && dest.hungCount >= 1);
    expect(d.stats().checkpoint).toBe(1);
    // The owner finishes the abandoned commits after their deadline...
    dest.releaseHung();
    dest.setBehaviour({ nodeId: "n1" }, "ok");
    const later = wal.put("a", 0, 2);
    expect(await d.drain(3000)).toBe(true);
    // ...and the re-send finds them already there: the dispatcher's own
    // acknowledged appends are only the 2 later records.
    expect(dest.seqs("a", 0)).toEqual([...first, ...later]);
    expect(d.stats().committedRecords).toBe(2);
    const resend = dest.commitCalls.filter((c) => c.seqs.includes(first[0]!)).at(-1)!;
    expect(resend.seqs).toEqual([...first, ...later]);
  });

  it("splits a big lane into byte-capped batches committed in order", async () => {
    const { wal, dest, d } = rig({ maxBatchBytes: 300 });
    dest.addTopic("a", ["n1"]);
    const seqs = wal.put("a", 0, 20, 100);
    d.start();
    expect(await d.drain(2000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(seqs);
    const calls = dest.commitCalls.map((c) => c.seqs);
    expect(calls.length).toBeGreaterThan(5);
    expect(calls.flat()).toEqual(seqs);
  });

  it("never looks more than lookaheadWindows windows past a stuck record", async () => {
    const { wal, dest, d } = rig({ windowRecords: 8, windowCapRecords: 8, lookaheadWindows: 2 });
    dest.addTopic("a", ["n1", "n0"]);
    dest.setBehaviour({ nodeId: "n1" }, "error");
    const stuck = wal.put("a", 0, 1);
    const rest = wal.put("a", 1, 100);
    d.start();
    // Limit: stuck seq 1 + (1 + 2) windows of 8 → seqs below 25.
    await until(() => dest.seqs("a", 1).length === 23);
    await sleep(60);
    expect(dest.seqs("a", 1)).toEqual(rest.slice(0, 23));
    expect(d.stats().skipSetRecords).toBe(23);
    expect(d.stats().checkpoint).toBe(stuck[0]);

    dest.setBehaviour({ nodeId: "n1" }, "ok");
    expect(await d.drain(3000)).toBe(true);
    expectExactlyOnce(dest, keysOf([...stuck, ...rest]));
  });

  it("parks a held lane so the other partitions keep flowing past the lookahead (issue #13 item 5)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "narad-parked-"));
    try {
      const store = await openParkedStore({
        dir,
        incarnation: "0123456789abcdef",
        walCheckpoint: 1,
        maxBytes: 1 << 20,
        logger: quiet,
      });
      const { wal, dest, d } = rig(
        { windowRecords: 8, windowCapRecords: 8, lookaheadWindows: 2 },
        undefined,
        store,
      );
      dest.addTopic("a", ["n1", "n0"]);
      dest.setMember("n1", "Maintenance");
      const stuck = wal.put("a", 0, 3);
      const rest = wal.put("a", 1, 100);
      const later = wal.put("a", 0, 2); // behind the parked ones, same partition: order must hold
      d.start();
      // Without parking only the 23 records within 3 windows of the stuck one get through.
      await until(() => dest.seqs("a", 1).length === 100);
      expect(d.stats().checkpoint).toBeGreaterThan(stuck[0]!);
      // The stuck records are parked. A later record of the same lane is parked too when a
      // pass's read stopped at its window before the WAL's end (where a window ends depends
      // on which commits had finished), never a record of another lane.
      const parkedSeqs = store.records().map((r) => r.seq);
      expect(parkedSeqs.slice(0, 3)).toEqual(stuck);
      for (const s of parkedSeqs.slice(3)) expect(later).toContain(s);
      expect(d.stats().parkedRecords).toBe(parkedSeqs.length);
      // Parked records still count as pending (a drain or a decommission waits for them).
      await until(() => d.stats().pendingRecords === 5);
      const lane = d.stalledLanes().find((l) => l.partition === 0);
      expect(lane?.reason).toBe("maintenance");
      expect(lane?.records).toBe(5);
      dest.setMember("n1", "Active");
      expect(await d.drain(3000)).toBe(true);
      expect(dest.seqs("a", 0)).toEqual([...stuck, ...later]); // in seq order
      expectExactlyOnce(dest, keysOf([...stuck, ...rest, ...later]));
      expect(store.size).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("steps over seqs the WAL no longer has (dropped corrupt frames)", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n0"]);
    const seqs = wal.put("a", 0, 10);
    wal.dropSeqs([3, 4, 8]);
    d.start();
    expect(await d.drain(2000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(seqs.filter((s) => ![3, 4, 8].includes(s)));
  });

  it("backs off after a WAL read error and carries on", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n0"]);
    const seqs = wal.put("a", 0, 3);
    wal.failReads = new Error("EIO");
    d.start();
    await until(() => d.stats().errors >= 1);
    wal.failReads = null;
    expect(await d.drain(2000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(seqs);
  });

  it("keeps done seqs when the checkpoint write fails, and writes it on a later pass", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n0"]);
    wal.failCheckpoint = new Error("ENOSPC");
    const seqs = wal.put("a", 0, 3);
    d.start();
    await until(() => d.stats().errors >= 1);
    expect(dest.seqs("a", 0)).toEqual(seqs);
    wal.failCheckpoint = null;
    expect(await d.drain(2000)).toBe(true);
    expect(dest.commitCalls).toHaveLength(1); // nothing re-sent: the skip-set remembered
  });

  it("drain resolves true at zero pending and false on timeout", async () => {
    const { wal, dest, d } = rig();
    dest.addTopic("a", ["n1"]);
    expect(await d.drain(10)).toBe(true); // nothing pending
    dest.setBehaviour({ nodeId: "n1" }, "error");
    wal.put("a", 0, 2);
    d.start();
    const t0 = Date.now();
    expect(await d.drain(50)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    dest.setBehaviour({ nodeId: "n1" }, "ok");
    expect(await d.drain(2000)).toBe(true);
  });

  it("stop() is prompt even with a hung commit, and leaves no timers", async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    const { wal, dest, d } = rig({ commitTimeoutMs: 60_000, idlePollMs: 60_000, errorBackoffMs: 60_000 });
    dest.addTopic("a", ["n1"]);
    dest.setBehaviour({ nodeId: "n1" }, "hang");
    wal.put("a", 0, 2);
    d.start();
    await until(() => dest.hungCount === 1);
    const pendingDrain = d.drain(60_000);
    const t0 = Date.now();
    await d.stop();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(await pendingDrain).toBe(false);
    // Other tests' timers may expire meanwhile: the dispatcher must add none.
    expect(timers()).toBeLessThanOrEqual(before);
    expect(wal.checkpoints).toEqual([]);
    running = running.filter((x) => x !== d);
    await d.stop(); // idempotent
  });
});
