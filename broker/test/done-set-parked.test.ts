// Review of 72a2615 (durable done-set): the done-set counts PARKED seqs as
// done, but the parked store, at open, ignores (and deletes the files of)
// parked records at or above the first seq the WAL still holds from its
// checkpoint ("the WAL still dispatches them"). When the saved done-set holds
// parked seqs and the checkpoint on disk is below them, the WAL skips them
// (done-set) and the parked store drops them (WAL has them): acknowledged
// records are lost. Two ways to get there, both real processes and kill -9:
//  - a crash between the done-set write and the checkpoint write of a pass
//    that parked records (done-set.ts orders save → checkpoint): reproduced
//    by putting back the checkpoint file as it was before that pass (absent);
//  - a malformed checkpoint file (reset to 1, "duplicates, never loss"): the
//    last saved done-set still holds the pass's parked seqs (it saves the
//    whole skip-set, below the new checkpoint too) and is clipped to [1, next).
//
// The parking pass must leave done seqs above its new checkpoint (or nothing
// is saved): a window smaller than the one the committed records were read
// with. Here the restart lowers --dispatch-window-records; in one process the
// same happens whenever the window shrinks (nextWindowRecords: 64 × partitions
// with traffic in the last pass).

import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createTopic, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const topic = "dsp";
const lookahead = ["--dispatch-lookahead-windows", "1"];

async function produce(url: string, lines: Array<{ id: string; partition: number }>): Promise<void> {
  const body = lines.map((l) => JSON.stringify({ key: l.id, partition: l.partition, payload: { id: l.id } }));
  const res = await fetch(`${url}/v1/topics/${topic}/produce-batch`, {
    method: "POST",
    body: body.join("\n"),
    headers: { "content-type": "application/x-ndjson" },
  });
  await res.arrayBuffer();
  expect(res.status).toBe(202);
}

async function hwm(url: string, p: number): Promise<number | undefined> {
  const res = await fetch(`${url}/v1/topics/${topic}/records?partition=${p}&offset=0&limit=1`);
  if (res.status !== 200) return undefined;
  return ((await res.json()) as { high_watermark: number }).high_watermark;
}

async function status(url: string) {
  return (await (await fetch(`${url}/admin/v1/status`)).json()) as {
    drained: boolean;
    wal: { checkpoint: number };
    dispatch: { parkedRecords: number };
  };
}

let broker: RunningNarad | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await broker?.kill9();
  broker = undefined;
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

async function scenario(damage: (walDir: string) => void): Promise<{ p0: number; p1: number }> {
  broker = await startNarad({
    args: [...lookahead, "--dispatch-window-records", "128"],
    keepData: true,
    logLevel: "error",
  });
  dataDir = broker.dataDir;
  await createTopic(broker.url, topic, 2);
  await broker.kill9();
  // Partition 1's log cannot open (its directory is a file): every commit to it fails.
  const pdir = join(dataDir, "topics", topic, "p00001");
  mkdirSync(join(dataDir, "topics", topic), { recursive: true });
  rmSync(pdir, { recursive: true, force: true });
  writeFileSync(pdir, "not a directory");

  // Window 128: one pass reads all 110 to the WAL end; p0's 10 commit above
  // the checkpoint p1 pins (seq 1), and that skip-set is saved.
  broker = await startNarad({
    dataDir,
    args: [...lookahead, "--dispatch-window-records", "128"],
    logLevel: "error",
  });
  let url = broker.url;
  const stuck = Array.from({ length: 100 }, (_, i) => ({ id: `stuck-${i}`, partition: 1 }));
  const ok = Array.from({ length: 10 }, (_, i) => ({ id: `ok-${i}`, partition: 0 }));
  await produce(url, [...stuck, ...ok]);
  await waitFor("p0 committed", 30_000, async () =>
    ((await hwm(url, 0)) ?? 0) >= ok.length ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 300));
  expect((await status(url)).wal.checkpoint).toBe(1);
  await broker.kill9();

  // Window 64: the first pass reads p1's first 64 (stopped by the window),
  // parks them, and saves {parked 1..64, committed 101..110} before writing
  // checkpoint 65.
  broker = await startNarad({
    dataDir,
    args: [...lookahead, "--dispatch-window-records", "64"],
    logLevel: "error",
  });
  url = broker.url;
  await waitFor("parked", 30_000, async () =>
    (await status(url)).dispatch.parkedRecords >= 64 ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 300));
  expect((await status(url)).wal.checkpoint).toBe(65);
  await broker.kill9();
  // The parking pass's save (the committed p0 seqs above checkpoint 65; before the fix also parked 1..64).
  const saved = JSON.parse(readFileSync(join(dataDir, "dispatch", "done-set"), "utf8")) as {
    ranges: number[][];
  };
  expect(saved.ranges).toContainEqual([101, 111]);

  damage(join(dataDir, "ingress", "produce"));
  rmSync(pdir, { force: true }); // repair partition 1
  broker = await startNarad({
    dataDir,
    args: [...lookahead, "--dispatch-window-records", "64"],
    logLevel: "error",
  });
  url = broker.url;
  await waitFor("drained", 30_000, async () => {
    if ((await status(url)).drained) return true;
    await new Promise((r) => setTimeout(r, 200));
    return undefined;
  });
  await new Promise((r) => setTimeout(r, 500));
  return { p0: (await hwm(url, 0)) ?? -1, p1: (await hwm(url, 1)) ?? -1 };
}

describe("done-set × parked store (72a2615)", () => {
  it("a crash between the done-set write and the checkpoint write loses the pass's parked records", async () => {
    // The disk as that crash leaves it: the done-set of the parking pass, the checkpoint before it (none: 1).
    const got = await scenario((walDir) => rmSync(join(walDir, "checkpoint"), { force: true }));
    expect(got.p0).toBe(10);
    expect(got.p1, "acknowledged records of partition 1 stored").toBe(100);
  }, 120_000);

  it("a malformed checkpoint file (reset to 1) loses parked records the last done-set names", async () => {
    const got = await scenario((walDir) => writeFileSync(join(walDir, "checkpoint"), "bad"));
    expect(got.p0).toBe(10);
    expect(got.p1, "acknowledged records of partition 1 stored").toBe(100);
  }, 120_000);
});
