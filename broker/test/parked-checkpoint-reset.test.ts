// A malformed WAL checkpoint file restarts dispatch from seq 1 (wal/checkpoint.ts).
// The parked store used to take every parked record at or above the WAL
// checkpoint as "still in the WAL", ignore it and delete its file, although
// the WAL segments holding those seqs had long been deleted: acknowledged
// records of a stalled partition were lost. Real process, kill -9.

import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const topic = "ckreset";
// Small WAL segments (rotation at 1 MiB dispatched) so the parked seqs' segments are deleted.
const args = [
  "--wal-segment-bytes",
  String(2 * 1024 * 1024),
  "--dispatch-window-records",
  "64",
  "--dispatch-lookahead-windows",
  "1",
];

async function produce(url: string, partition: number, ids: string[]): Promise<boolean> {
  const pad = "x".repeat(1024);
  const body = ids.map((id) => JSON.stringify({ key: id, partition, payload: { id, pad } })).join("\n");
  const res = await fetch(`${url}/v1/topics/${topic}/produce-batch`, {
    method: "POST",
    body,
    headers: { "content-type": "application/x-ndjson" },
  });
  await res.arrayBuffer();
  return res.status === 202;
}

/** High watermark of one partition (read route: it opens only that partition's log). */
async function hwm(url: string, p: number): Promise<number | undefined> {
  const res = await fetch(`${url}/v1/topics/${topic}/records?partition=${p}&offset=0&limit=1`);
  if (res.status !== 200) return undefined;
  return ((await res.json()) as { high_watermark: number }).high_watermark;
}

async function status(url: string) {
  return (await (await fetch(`${url}/admin/v1/status`)).json()) as {
    drained: boolean;
    wal: { checkpoint?: number; segments?: number };
    dispatch: { parkedRecords: number; checkpoint: number };
  };
}

describe("parked records survive a reset WAL checkpoint", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.kill9();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("delivers every parked record after a malformed checkpoint file", async () => {
    broker = await startNarad({ args, keepData: true, logLevel: "error" });
    dataDir = broker.dataDir;
    await createTopic(broker.url, topic, 2);
    await broker.kill9();
    // Break partition 1: its directory is a file, so every commit to it fails and its records are parked.
    const pdir = join(dataDir, "topics", topic, "p00001");
    mkdirSync(join(dataDir, "topics", topic), { recursive: true });
    rmSync(pdir, { recursive: true, force: true });
    writeFileSync(pdir, "not a directory");

    broker = await startNarad({ dataDir, args, logLevel: "error" });
    let url = broker.url;
    const stuck = Array.from({ length: 50 }, (_, i) => `stuck-${i}`);
    expect(await produce(url, 1, stuck)).toBe(true);
    // Enough traffic on partition 0 to roll and delete the segments holding the parked seqs.
    let healthy = 0;
    for (let b = 0; b < 60; b++) {
      const ids = Array.from({ length: 100 }, (_, i) => `ok-${b}-${i}`);
      expect(await produce(url, 0, ids)).toBe(true);
      healthy += ids.length;
    }
    await waitFor("healthy partition committed", 60_000, async () =>
      ((await hwm(url, 0)) ?? 0) >= healthy ? true : undefined,
    );
    await waitFor("parked", 30_000, async () =>
      (await status(url)).dispatch.parkedRecords >= stuck.length ? true : undefined,
    );
    const walDir = join(dataDir, "ingress", "produce");
    await waitFor("first segment deleted", 30_000, async () => {
      const segs = readdirSync(walDir)
        .filter((n) => n.endsWith(".wal"))
        .sort();
      const first = Number.parseInt(segs[0]!, 10);
      if (first > 1) return true;
      await new Promise((r) => setTimeout(r, 200));
      return undefined;
    });
    await broker.kill9();

    // The checkpoint file is damaged (3 bytes): the WAL restarts dispatch from seq 1.
    writeFileSync(join(walDir, "checkpoint"), "bad");
    rmSync(pdir, { force: true }); // repair partition 1
    broker = await startNarad({ dataDir, args, logLevel: "error" });
    url = broker.url;
    await waitFor("drained", 30_000, async () => {
      const st = await status(url);
      if (st.drained) return true;
      await new Promise((r) => setTimeout(r, 500));
      return undefined;
    }).catch(async (e) => {
      console.log(JSON.stringify(await status(url)));
      throw e;
    });
    expect(existsSync(join(dataDir, "parked"))).toBe(true);
    expect(await hwm(url, 0), "partition 0 stored once (WAL re-dispatch deduped)").toBe(healthy);
    expect(await hwm(url, 1), "parked records of partition 1 stored after the restart").toBe(stuck.length);
  }, 180_000);
});
