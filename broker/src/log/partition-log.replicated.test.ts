// A replicated partition's log as its leader opens it (ADR 0007): commits
// append, fsync and verify, but the HWM moves only by advanceHwm, and a
// commit resolves only once the gate says its records are replicated.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { isLogError, LogError } from "./log-errors.ts";
import { type OpenedPartitionLog, openPartitionLog, type ReplicaCommitGate } from "./partition-log.ts";

const inc = "00000000000000aa";
let root: string;
let dir: string;
const opened: OpenedPartitionLog[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-plog-repl-"));
  dir = join(root, "p00000");
});

afterEach(async () => {
  for (const log of opened.splice(0)) await log.close().catch(() => {});
  await rm(root, { recursive: true, force: true });
});

function recs(from: number, n: number, payloadBytes = 20): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${from + i}`),
    createdMs: from + i,
    payload: Buffer.alloc(payloadBytes, (from + i) & 0xff),
    incarnation: inc,
    seq: from + i,
  }));
}

/** A gate the test drives: commits wait until release(end) or fail(err). */
class TestGate implements ReplicaCommitGate {
  leading = true;
  ends: number[] = [];
  waits: Array<{ end: number; resolve: () => void; reject: (e: unknown) => void }> = [];
  assertLeading(): void {
    if (!this.leading) throw new LogError("NOT_LEADER", "test: not leading");
  }
  onLogEnd(end: number): void {
    this.ends.push(end);
  }
  awaitReplicated(end: number): Promise<void> {
    return new Promise((resolve, reject) => this.waits.push({ end, resolve, reject }));
  }
  release(upTo: number): void {
    for (const w of this.waits.filter((x) => x.end <= upTo)) w.resolve();
    this.waits = this.waits.filter((x) => x.end > upTo);
  }
}

async function open(gate: ReplicaCommitGate, knownHwm = 0, segmentBytes = 1 << 20) {
  const log = await openPartitionLog({
    dir,
    segmentBytes,
    indexIntervalBytes: 256,
    maxFrameBytes: 1 << 20,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => 1_000,
    replication: { gate, knownHwm },
  });
  opened.push(log);
  return log;
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(cond()).toBe(true);
};

describe("replicated partition log", () => {
  it("appends durably but exposes and answers nothing until the leader moves the HWM", async () => {
    const gate = new TestGate();
    const log = await open(gate);
    let answered = false;
    const commit = log.commitDurable(recs(1, 3)).then((r) => {
      answered = true;
      return r;
    });
    await until(() => gate.waits.length === 1);
    expect(gate.ends).toEqual([3]);
    expect(gate.waits[0]!.end).toBe(3);
    expect(log.stats()).toMatchObject({ nextOffset: 3, highWatermark: 0 });
    expect(await log.read(0, 10, 1 << 20)).toEqual([]);
    expect(answered).toBe(false);

    log.advanceHwm(2);
    expect((await log.read(0, 10, 1 << 20)).map((r) => r.offset)).toEqual([0, 1]);
    gate.release(3);
    const r = await commit;
    expect(r).toMatchObject({ baseOffset: 0, appended: 3, outcomes: [0, 1, 2] });
  });

  it("never moves the HWM backwards or past the durable end", async () => {
    const gate = new TestGate();
    const log = await open(gate);
    void log.commitDurable(recs(1, 2));
    await until(() => gate.waits.length === 1);
    log.advanceHwm(99);
    expect(log.stats().highWatermark).toBe(2);
    log.advanceHwm(1);
    expect(log.stats().highWatermark).toBe(2);
    gate.release(2);
  });

  it("a commit refused by the gate appends nothing", async () => {
    const gate = new TestGate();
    gate.leading = false;
    const log = await open(gate);
    await expect(log.commitDurable(recs(1, 2))).rejects.toSatisfy((e) => isLogError(e, "NOT_LEADER"));
    expect(log.stats().nextOffset).toBe(0);
    expect(gate.ends).toEqual([]);
  });

  it("a re-sent batch is deduped and waits for the replicas of the original", async () => {
    const gate = new TestGate();
    const log = await open(gate);
    const first = log.commitDurable(recs(1, 2));
    await until(() => gate.waits.length === 1);
    const again = log.commitDurable(recs(1, 2));
    await until(() => gate.waits.length === 2);
    expect(gate.waits[1]!.end).toBe(2);
    gate.release(2);
    expect(await first).toMatchObject({ appended: 2 });
    expect(await again).toMatchObject({ appended: 0, duplicates: 2, outcomes: [0, 1] });
  });

  it("commits pipeline: the next append does not wait for the previous one's replicas", async () => {
    const gate = new TestGate();
    const log = await open(gate);
    void log.commitDurable(recs(1, 2));
    void log.commitDurable(recs(3, 2));
    await until(() => gate.waits.length === 2);
    expect(gate.waits.map((w) => w.end)).toEqual([2, 4]);
    gate.release(4);
  });

  it("serves raw frames above the HWM to followers only when asked for the end", async () => {
    const gate = new TestGate();
    const log = await open(gate);
    void log.commitDurable(recs(1, 3));
    await until(() => gate.waits.length === 1);
    expect((await log.readRawFrames(0, 1 << 20)).nextOffset).toBe(0);
    const raw = await log.readRawFrames(0, 1 << 20, "end");
    expect(raw.nextOffset).toBe(3);
    expect(raw.frames.length).toBeGreaterThan(0);
    await log.waitForEndAbove(2, 10);
    gate.release(3);
  });

  it("reopens with the HWM it knew, never above the recovered end", async () => {
    const gate = new TestGate();
    let log = await open(gate);
    void log.commitDurable(recs(1, 5));
    await until(() => gate.waits.length === 1);
    log.advanceHwm(2);
    gate.release(5);
    await log.close();
    log = await open(new TestGate(), 4);
    expect(log.stats()).toMatchObject({ nextOffset: 5, highWatermark: 4 });
    await log.close();
    log = await open(new TestGate(), 50);
    expect(log.stats()).toMatchObject({ nextOffset: 5, highWatermark: 5 });
  });

  it("retention keeps segments that hold records above the HWM", async () => {
    const gate = new TestGate();
    const log = await open(gate, 0, 200);
    for (let i = 0; i < 6; i++) {
      void log.commitDurable(recs(1 + i * 2, 2, 60));
      await until(() => gate.waits.length === i + 1);
    }
    const segments = log.stats().segments;
    expect(segments).toBeGreaterThan(2);
    expect(await log.applyRetention(0, 1)).toBe(0);
    log.advanceHwm(log.stats().nextOffset);
    expect(await log.applyRetention(0, 1)).toBe(segments - 1);
    gate.release(1_000);
  });
});

describe("replicated partition log: the dedup floor after a deposed leader's tail is cut", () => {
  it("retention on the leader never records seqs of records above the HWM in the dedup floor", async () => {
    // A leader appends 1-12 (six frames over several segments); the
    // replicas have 1-4 only (HWM 4). Retention deletes the first
    // segment and writes the dedup floor before it unlinks.
    const gate = new TestGate();
    let log = await open(gate, 0, 200);
    for (let i = 0; i < 6; i++) {
      void log.commitDurable(recs(1 + i * 2, 2, 60)).catch(() => {});
      await until(() => gate.waits.length === i + 1);
    }
    log.advanceHwm(4);
    expect(await log.applyRetention(0, 1)).toBeGreaterThan(0);
    const tailStart = log.stats().highWatermark;
    expect(log.stats().nextOffset).toBe(12);
    await log.close();
    // Deposed: the new leader never had 5-12, so this copy's fetcher cuts them
    // (fetcher.ts truncation; here directly, with the follower's own log).
    const { ReplicaLog } = await import("../replication-io/replica-log.ts");
    const copy = await ReplicaLog.open({ dir, segmentBytes: 200, maxFrameBytes: 1 << 20 });
    await copy.truncateTo(tailStart);
    expect(copy.endOffset).toBe(4);
    // Elected again, before the senders re-sent 5-12: their re-send must be
    // appended, since nothing of it is here any more.
    const gate2 = new TestGate();
    log = await open(gate2, 4, 200);
    const again = log.commitDurable(recs(5, 8, 60));
    await until(() => gate2.waits.length === 1);
    gate2.release(1_000);
    const r = await again;
    expect(r.duplicates).toBe(0);
    expect(r.appended).toBe(8);
    expect(log.stats().nextOffset).toBe(12);
    // What retention deleted was committed: its re-send is still a duplicate.
    const old = log.commitDurable(recs(1, 4, 60));
    await until(() => gate2.waits.length === 1);
    gate2.release(1_000);
    expect(await old).toMatchObject({ appended: 0, duplicates: 4 });
  });
});
