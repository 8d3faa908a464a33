// Review of 72a2615: what the per-pass done-set save costs the dispatcher.
// In-process: fake WAL and fake owners (no network), the real parked store
// and the real done-set store on this disk. A producer appends 50 records
// every ms, alternating partition 0 and 1; with "held" partition 0's owner is
// in Maintenance (its records pin the checkpoint and sit in the WAL until a
// pass stops short of the WAL end and parks them). Reports passes/s,
// committed records/s and done-set saves/s, with and without the done-set.
// `npx node bench/done-set-cost.ts` (BENCH_SECONDS, default 3).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDispatcher } from "../broker/src/dispatch/dispatcher.ts";
import { openDoneSetStore } from "../broker/src/dispatch/done-set-store.ts";
import { openParkedStore } from "../broker/src/dispatch/parked-store.ts";
import { createFakeDestinations } from "../broker/src/testing/fake-destinations.ts";
import { createFakeWal } from "../broker/src/testing/fake-wal.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function run(held: boolean, withDoneSet: boolean) {
  const dir = mkdtempSync(join(tmpdir(), "narad-dscost-"));
  const wal = createFakeWal();
  const dest = createFakeDestinations("n0");
  dest.addTopic("a", ["n1", "n2"]);
  if (held) dest.setMember("n1", "Maintenance");
  const parked = await openParkedStore({
    dir: join(dir, "parked"),
    incarnation: wal.incarnation,
    walCheckpoint: 1,
    maxBytes: 256 * 1024 * 1024,
    logger: quiet,
  });
  let saves = 0;
  let saveMs = 0;
  let maxRanges = 0;
  const real = await openDoneSetStore({
    dir: join(dir, "dispatch"),
    incarnation: wal.incarnation,
    checkpoint: 1,
    nextSeq: 1,
    logger: quiet,
  });
  const doneSet = {
    initial: real.initial,
    save: async (s: Parameters<typeof real.save>[0]) => {
      saves++;
      maxRanges = Math.max(maxRanges, s.length);
      const t = performance.now();
      await real.save(s);
      saveMs += performance.now() - t;
    },
  };
  const d = createDispatcher({
    wal,
    destinations: dest,
    incarnation: wal.incarnation,
    options: {
      idlePollMs: 1,
      windowRecords: 4096,
      windowCapRecords: 65536,
      targetPerPartition: 64,
      lookaheadWindows: 16,
      rerouteAfterPasses: 3,
      commitTimeoutMs: 1000,
      errorBackoffMs: 5,
      commitFanout: 4,
      maxBatchBytes: 1024 * 1024,
    },
    logger: quiet,
    nowMs: () => Date.now(),
    parked,
    ...(withDoneSet ? { doneSet } : {}),
  });
  d.start();
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    for (let i = 0; i < 25; i++) {
      wal.put("a", 0, 1, 100);
      wal.put("a", 1, 1, 100);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const st = d.stats();
  await d.stop();
  rmSync(dir, { recursive: true, force: true });
  const p1 = dest.seqs("a", 1).length;
  console.log(
    `held=${held} doneSet=${withDoneSet}: passes/s=${(st.passes / seconds).toFixed(0)} p1 committed/s=${(p1 / seconds).toFixed(0)} saves/s=${(saves / seconds).toFixed(0)} produced/s=${((wal.stats().nextSeq - 1) / seconds).toFixed(0)} mean save ms=${saves ? (saveMs / saves).toFixed(1) : "-"} max ranges saved=${maxRanges} backlog=${wal.stats().pendingRecords} parked=${st.parkedRecords}`,
  );
}

for (const held of [false, true]) for (const ds of [false, true]) await run(held, ds);
