// Issue #13 item 5 with the real broker process and real kill -9: one
// partition whose log cannot open (its directory replaced by a file, so
// every commit to it fails) must not stop dispatch of the others past the
// lookahead, and across kill -9 at random moments while records are being
// parked and released every acknowledged record is, in the end, stored
// exactly once. Small window and lookahead (64 records, 1 window) so the old
// stall would show after a few hundred records.

import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const topic = "park";
const partitions = 3;
const broken = 1;
const args = ["--dispatch-window-records", "64", "--dispatch-lookahead-windows", "1"];

interface Acked {
  /** partition → ids acknowledged (202). */
  byPartition: Map<number, Set<string>>;
}

async function produceUntil(
  url: string,
  producer: number,
  round: number,
  acked: Acked,
  stop: { now: boolean },
) {
  for (let i = 0; !stop.now; i++) {
    const partition = (producer + i) % partitions;
    const ids = Array.from({ length: 10 }, (_, j) => `r${round}-p${producer}-b${i}-${j}`);
    const body = ids.map((id) => JSON.stringify({ key: id, partition, payload: { id } })).join("\n");
    try {
      const res = await fetch(`${url}/v1/topics/${topic}/produce-batch`, {
        method: "POST",
        body,
        headers: { "content-type": "application/x-ndjson" },
      });
      await res.arrayBuffer();
      if (res.status === 202) for (const id of ids) acked.byPartition.get(partition)!.add(id);
    } catch {
      return; // the process died: this batch was never acknowledged
    }
  }
}

/** ids stored in one partition (throws when it cannot be read). */
async function readPartition(url: string, p: number): Promise<string[]> {
  const out: string[] = [];
  let offset = 0;
  for (;;) {
    const res = await fetch(`${url}/v1/topics/${topic}/records?partition=${p}&offset=${offset}&limit=1000`);
    if (res.status !== 200) throw new Error(`read ${p}@${offset}: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as {
      records: Array<{ payload: { id: string } }>;
      next_offset: number;
      high_watermark: number;
    };
    for (const r of page.records) out.push(r.payload.id);
    if (page.records.length === 0 || page.next_offset >= page.high_watermark) return out;
    offset = page.next_offset;
  }
}

async function status(url: string) {
  return (await (await fetch(`${url}/admin/v1/status`)).json()) as {
    drained: boolean;
    wal: { pendingRecords: number };
    dispatch: { parkedRecords: number; stalledLanes: Array<{ partition: number; reason: string }> };
  };
}

describe("parking a stalled partition (real process, kill -9)", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.kill9();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps the other partitions flowing and loses nothing acknowledged across kill -9", async () => {
    broker = await startNarad({ args, keepData: true, logLevel: "error" });
    dataDir = broker.dataDir;
    await createTopic(broker.url, topic, partitions);
    await broker.kill9();
    // Break partition 1: its directory is a file, so opening its log fails on every commit.
    const pdir = join(dataDir, "topics", topic, `p0000${broken}`);
    mkdirSync(join(dataDir, "topics", topic), { recursive: true });
    rmSync(pdir, { recursive: true, force: true });
    writeFileSync(pdir, "not a directory");

    const acked: Acked = {
      byPartition: new Map(Array.from({ length: partitions }, (_, p) => [p, new Set()])),
    };
    const rounds = 3;
    for (let round = 0; round < rounds; round++) {
      broker = await startNarad({ dataDir, args, logLevel: "error" });
      const stop = { now: false };
      const producers = Array.from({ length: 6 }, (_, i) => produceUntil(broker!.url, i, round, acked, stop));
      // Let records be parked and released, then kill -9 at a moment that varies by round.
      await new Promise((r) => setTimeout(r, 1_500 + round * 700 + Math.floor(Math.random() * 500)));
      await broker.kill9();
      stop.now = true;
      await Promise.all(producers);
    }

    broker = await startNarad({ dataDir, args, logLevel: "error" });
    const url = broker.url;
    const healthy = [0, 2];
    const healthyAcked = healthy.reduce((n, p) => n + acked.byPartition.get(p)!.size, 0);
    // Far more than the lookahead (64 × (1 + 1) records past the stuck one) must get through.
    expect(healthyAcked).toBeGreaterThan(1_000);
    await waitFor(
      "healthy partitions hold every acknowledged record while partition 1 is broken",
      90_000,
      async () => {
        let n = 0;
        for (const p of healthy) n += (await readPartition(url, p)).length;
        if (n >= healthyAcked) return n;
        await new Promise((r) => setTimeout(r, 250));
        return undefined;
      },
    );
    const st = await status(url);
    expect(st.dispatch.parkedRecords).toBeGreaterThan(0);
    expect(st.wal.pendingRecords).toBeGreaterThanOrEqual(st.dispatch.parkedRecords);
    expect(st.drained).toBe(false);
    expect(
      st.dispatch.stalledLanes.some((l) => l.partition === broken && l.reason === "commit-failing"),
    ).toBe(true);

    // Repair partition 1 (crash first: the broker holds nothing of it open) and let it drain.
    await broker.kill9();
    rmSync(pdir, { force: true });
    broker = await startNarad({ dataDir, args, logLevel: "error" });
    const url2 = broker.url;
    await waitFor("drained", 90_000, async () => ((await status(url2)).drained ? true : undefined));
    expect(existsSync(join(dataDir, "parked"))).toBe(true);

    let ackedTotal = 0;
    for (let p = 0; p < partitions; p++) {
      const ids = await readPartition(url2, p);
      const want = acked.byPartition.get(p)!;
      ackedTotal += want.size;
      const stored = new Set(ids);
      const lost = [...want].filter((id) => !stored.has(id));
      expect(lost, `partition ${p}: acknowledged but not stored`).toEqual([]);
      expect(ids.length - stored.size, `partition ${p}: stored twice`).toBe(0);
    }
    console.log(
      `parking kill -9: ${ackedTotal} acknowledged (${healthyAcked} to healthy partitions), 0 lost`,
    );
  }, 300_000);
});
