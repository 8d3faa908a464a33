// The durable done-set (done-set-store.ts): the seqs above a pinned
// checkpoint that a crashed process had finished are not dispatched again
// by the next one (simulation finding F1: a committed record whose owner is
// Down after the restart was rerouted and stored twice).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFakeDestinations } from "../testing/fake-destinations.ts";
import { createFakeWal, type FakeWal } from "../testing/fake-wal.ts";
import { createDispatcher } from "./dispatcher.ts";
import {
  clipDoneSet,
  type DoneSetStore,
  decodeDoneSet,
  encodeDoneSet,
  openDoneSetStore,
} from "./done-set-store.ts";
import type { Dispatcher, DispatcherOptions, DispatchLogger } from "./types.ts";

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
const logger = { warn() {}, error() {} };

const dirs: string[] = [];
const running: Dispatcher[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function until(cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 2));
  }
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "narad-done-set-"));
  dirs.push(d);
  return d;
}

function open(dir: string, wal: FakeWal): Promise<DoneSetStore> {
  const st = wal.stats();
  return openDoneSetStore({
    dir,
    incarnation: wal.incarnation,
    checkpoint: st.checkpoint,
    nextSeq: st.nextSeq,
    logger,
  });
}

describe("dispatch done-set", () => {
  it("a restart does not re-dispatch what the crashed process committed above a pinned checkpoint", async () => {
    const dir = tempDir();
    const wal = createFakeWal();
    const dest = createFakeDestinations("n0");
    dest.addTopic("a", ["n1", "n2", "n3"]);
    // n1 in Maintenance pins the checkpoint at seq 1; partition 1 (n2) commits.
    dest.setMember("n1", "Maintenance");
    const held = wal.put("a", 0, 5);
    const done = wal.put("a", 1, 5);
    const first = createDispatcher({
      wal,
      destinations: dest,
      incarnation: wal.incarnation,
      options: opts,
      logger: quiet,
      nowMs: () => Date.now(),
      doneSet: await open(dir, wal),
    });
    running.push(first);
    first.start();
    await until(() => dest.seqs("a", 1).length === 5);
    await until(() => first.stats().skipSetRecords === 5);
    // kill -9: the process stops; only the disk (WAL, checkpoint, done-set) is left.
    await first.stop();
    expect(wal.stats().checkpoint).toBe(1);
    // After the restart n2 is Down: without the done-set its 5 committed
    // records would be rerouted to partition 2 (n3) and stored twice.
    dest.setMember("n2", "Down");
    const store = await open(dir, wal);
    expect(store.initial).toEqual([{ from: done[0], to: done[4]! + 1 }]);
    const second = createDispatcher({
      wal,
      destinations: dest,
      incarnation: wal.incarnation,
      options: opts,
      logger: quiet,
      nowMs: () => Date.now(),
      doneSet: store,
    });
    running.push(second);
    second.start();
    dest.setMember("n1", "Active");
    expect(await second.drain(3000)).toBe(true);
    expect(dest.seqs("a", 0)).toEqual(held);
    expect(dest.seqs("a", 2)).toEqual([]);
    expect(dest.allKeys().sort()).toEqual([...held, ...done].map((s) => `k${s}`).sort());
    expect(second.stats().reroutedRecords).toBe(0);
  });

  it("ignores a set of another WAL incarnation and an unreadable one (re-dispatch, never a skip)", async () => {
    const dir = tempDir();
    const wal = createFakeWal();
    wal.put("a", 0, 10);
    writeFileSync(join(dir, "done-set"), encodeDoneSet("ffffffffffffffff", [{ from: 1, to: 5 }]));
    expect((await open(dir, wal)).initial).toEqual([]);
    writeFileSync(join(dir, "done-set"), '{"version":1,"incarnation":');
    expect((await open(dir, wal)).initial).toEqual([]);
    writeFileSync(join(dir, "done-set"), encodeDoneSet(wal.incarnation, [{ from: 2, to: 4 }]));
    expect((await open(dir, wal)).initial).toEqual([{ from: 2, to: 4 }]);
  });

  it("saves durably and reads back what it saved", async () => {
    const dir = tempDir();
    const wal = createFakeWal();
    wal.put("a", 0, 20);
    const store = await open(dir, wal);
    await store.save([
      { from: 3, to: 5 },
      { from: 9, to: 12 },
    ]);
    expect(decodeDoneSet(readFileSync(join(dir, "done-set")))).toEqual({
      ok: true,
      incarnation: wal.incarnation,
      ranges: [
        { from: 3, to: 5 },
        { from: 9, to: 12 },
      ],
    });
    expect((await open(dir, wal)).initial).toEqual([
      { from: 3, to: 5 },
      { from: 9, to: 12 },
    ]);
  });

  it("clips to [checkpoint, next seq) and rejects malformed ranges", () => {
    expect(
      clipDoneSet(
        [
          { from: 1, to: 4 },
          { from: 6, to: 30 },
        ],
        3,
        20,
      ),
    ).toEqual([
      { from: 3, to: 4 },
      { from: 6, to: 20 },
    ]);
    expect(decodeDoneSet(Buffer.from('{"version":1,"incarnation":"x","ranges":[[5,5]]}')).ok).toBe(false);
    expect(decodeDoneSet(Buffer.from('{"version":1,"incarnation":"x","ranges":[[0,2]]}')).ok).toBe(false);
    expect(decodeDoneSet(Buffer.from('{"version":2,"incarnation":"x","ranges":[]}')).ok).toBe(false);
  });
});

describe("skipWithout (parked seqs never go into the saved done-set)", () => {
  it("cuts the given seqs out of the ranges", async () => {
    const { skipWithout } = await import("../core/dispatch-plan.ts");
    const seqs = (...s: number[]) => s.map((seq) => ({ seq }));
    expect(
      skipWithout(
        [
          { from: 1, to: 65 },
          { from: 101, to: 111 },
        ],
        seqs(1, 2, 3, 64, 105, 200),
      ),
    ).toEqual([
      { from: 4, to: 64 },
      { from: 101, to: 105 },
      { from: 106, to: 111 },
    ]);
    expect(skipWithout([{ from: 10, to: 12 }], seqs(1, 5))).toEqual([{ from: 10, to: 12 }]);
    expect(skipWithout([{ from: 10, to: 12 }], seqs(10, 11))).toEqual([]);
    expect(skipWithout([], seqs(1))).toEqual([]);
  });
});
