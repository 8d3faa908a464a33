// Queue consumption across a kill -9 of the real broker: the committed
// frontier is persisted about every 100 ms, so after a crash exactly the
// offsets at or above the last persisted frontier come back (at-least-once),
// and nothing below it is ever redelivered.

import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, highWatermarks, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const topic = "work";
const partitions = 3;
const total = 300;
const leftUnacked = 10;

interface Delivered {
  partition: number;
  offset: number;
  receipt_handle: string;
}

async function consumeOne(url: string, wait = "0ms"): Promise<Delivered | undefined> {
  const res = await fetch(`${url}/v1/topics/${topic}/consume?wait=${wait}`);
  if (res.status === 204) return undefined;
  if (res.status !== 200) throw new Error(`consume: ${res.status} ${await res.text()}`);
  return (await res.json()) as Delivered;
}

async function ack(url: string, handle: string): Promise<void> {
  const res = await fetch(`${url}/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(handle)}`, {
    method: "POST",
  });
  if (res.status !== 204) throw new Error(`ack: ${res.status} ${await res.text()}`);
}

async function committed(url: string): Promise<number[]> {
  const body = (await (await fetch(`${url}/v1/topics/${topic}/groups`)).json()) as {
    groups: Array<{ name: string; partitions: Array<{ committed: number }> }>;
  };
  return body.groups.find((g) => g.name === "default")?.partitions.map((p) => p.committed) ?? [];
}

function persistedFrontier(dataDir: string, partition: number): number {
  const p = join(
    dataDir,
    "topics",
    topic,
    `p${String(partition).padStart(5, "0")}`,
    "consumers",
    "default.offset",
  );
  try {
    const buf = readFileSync(p);
    return buf.readUInt32BE(0) * 0x1_0000_0000 + buf.readUInt32BE(4);
  } catch {
    return 0;
  }
}

const key = (d: { partition: number; offset: number }) => `${d.partition}:${d.offset}`;

describe("queue consumption across kill -9", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("redelivers exactly the offsets at or above the last persisted frontier", async () => {
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    const url = broker.url;
    await createTopic(url, topic, partitions);
    for (let i = 0; i < total; i++) {
      const res = await fetch(`${url}/v1/topics/${topic}/produce?key=k${i}`, {
        method: "POST",
        body: `${i}`,
      });
      expect(res.status).toBe(202);
    }
    const hwms = await waitFor("all produced records visible", 30_000, async () => {
      const h = await highWatermarks(url, topic);
      return h.reduce((a, b) => a + b, 0) === total ? h : undefined;
    });

    const before = new Map<string, number>();
    const deliver = (d: Delivered, into: Map<string, number>) =>
      into.set(key(d), (into.get(key(d)) ?? 0) + 1);

    // Phase A: half acked, then long enough for the batched persist to run.
    for (let i = 0; i < total / 2; i++) {
      const d = (await consumeOne(url)) as Delivered;
      deliver(d, before);
      await ack(url, d.receipt_handle);
    }
    await new Promise((r) => setTimeout(r, 400));
    const frontierA = await committed(url);
    for (let p = 0; p < partitions; p++) expect(persistedFrontier(dataDir, p)).toBe(frontierA[p]);

    // Phase B: the rest, the last few left unacked, then kill -9 at once.
    const unacked: Delivered[] = [];
    for (let d = await consumeOne(url); d !== undefined; d = await consumeOne(url)) {
      deliver(d, before);
      if (before.size > total - leftUnacked) unacked.push(d);
      else await ack(url, d.receipt_handle);
    }
    expect(before.size).toBe(total);
    const frontierB = await committed(url);
    await broker.kill9();
    const persisted = Array.from({ length: partitions }, (_, p) => persistedFrontier(dataDir as string, p));

    broker = await startNarad({ dataDir, keepData: true });
    const after = new Map<string, number>();
    for (let d = await consumeOne(broker.url, "300ms"); d !== undefined; d = await consumeOne(broker.url)) {
      deliver(d, after);
      await ack(broker.url, d.receipt_handle);
    }

    for (let p = 0; p < partitions; p++) {
      // The persisted frontier is between the one known durable (phase A) and the live one at the kill.
      expect(persisted[p]).toBeGreaterThanOrEqual(frontierA[p] as number);
      expect(persisted[p]).toBeLessThanOrEqual(frontierB[p] as number);
      const expected = [];
      for (let o = persisted[p] as number; o < (hwms[p] as number); o++) expected.push(`${p}:${o}`);
      const got = [...after.keys()].filter((k) => k.startsWith(`${p}:`));
      expect(got.sort()).toEqual(expected.sort());
    }
    // Every message delivered at least once; the unacked ones came back.
    for (let p = 0; p < partitions; p++)
      for (let o = 0; o < (hwms[p] as number); o++)
        expect(before.has(`${p}:${o}`) || after.has(`${p}:${o}`)).toBe(true);
    for (const d of unacked) expect(after.has(key(d))).toBe(true);
    // Nothing acked before the last known persist came back.
    for (const k of after.keys()) {
      const [p, o] = k.split(":").map(Number) as [number, number];
      expect(o).toBeGreaterThanOrEqual(frontierA[p] as number);
    }
    const ackedLost = after.size - unacked.length;
    console.log(
      `delivered ${total}; after kill -9: ${after.size} redelivered (${unacked.length} never acked, ` +
        `${ackedLost} acked after the last persist); frontiers at kill ${frontierB.join("/")}, persisted ${persisted.join("/")}`,
    );
    expect((await committed(broker.url)).reduce((a, b) => a + b, 0)).toBe(total);
  });

  it("redelivers nothing acked after a graceful stop (the frontier is flushed at shutdown)", async () => {
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    await createTopic(broker.url, topic, 1);
    for (let i = 0; i < 20; i++)
      await fetch(`${broker.url}/v1/topics/${topic}/produce`, { method: "POST", body: `${i}` });
    await waitFor("visible", 30_000, async () =>
      (await highWatermarks(broker!.url, topic))[0] === 20 ? true : undefined,
    );
    for (let i = 0; i < 20; i++) {
      const d = (await consumeOne(broker.url)) as Delivered;
      await ack(broker.url, d.receipt_handle);
    }
    // A long-poll in progress answers 204 at shutdown instead of holding it up.
    const polling = fetch(`${broker.url}/v1/topics/${topic}/consume?wait=10s`);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await broker.stop();
    expect((await polling).status).toBe(204);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(persistedFrontier(dataDir, 0)).toBe(20);
    broker = await startNarad({ dataDir, keepData: true });
    expect(await consumeOne(broker.url, "200ms")).toBeUndefined();
  });

  it("a seek answered 200 survives kill -9 at once: every record at or above the new offset comes back, none below", async () => {
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    await createTopic(broker.url, topic, 1);
    for (let i = 0; i < 30; i++)
      expect(
        (await fetch(`${broker.url}/v1/topics/${topic}/produce`, { method: "POST", body: `${i}` })).status,
      ).toBe(202);
    await waitFor("visible", 30_000, async () =>
      (await highWatermarks(broker!.url, topic))[0] === 30 ? true : undefined,
    );
    for (let i = 0; i < 30; i++) {
      const d = (await consumeOne(broker.url)) as Delivered;
      await ack(broker.url, d.receipt_handle);
    }
    // Back to 12, then kill -9 without waiting for any persist timer.
    const seek = await fetch(`${broker.url}/v1/topics/${topic}/groups/default/seek`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ partition: 0, offset: 12 }),
    });
    expect(seek.status, await seek.clone().text()).toBe(200);
    expect(((await seek.json()) as { partitions: unknown[] }).partitions).toEqual([
      { partition: 0, previous: 30, committed: 12 },
    ]);
    await broker.kill9();
    expect(persistedFrontier(dataDir, 0)).toBe(12);
    broker = await startNarad({ dataDir, keepData: true });
    const offsets: number[] = [];
    for (let d = await consumeOne(broker.url, "300ms"); d !== undefined; d = await consumeOne(broker.url)) {
      offsets.push(d.offset);
      await ack(broker.url, d.receipt_handle);
    }
    expect(offsets.sort((a, b) => a - b)).toEqual(Array.from({ length: 18 }, (_, i) => 12 + i));
  });
});
