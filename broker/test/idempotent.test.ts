// Idempotent producers end to end: a real broker process behind a proxy that
// drops some produce-batch responses after the broker stored the batch (the
// client sees a network error and retries), plus one kill -9 and restart of
// the broker mid-run. The idempotent producer must deliver every record
// exactly once; a plain producer in the same run shows the duplicates that
// retries cause without idempotence.

import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FencedProducerError, NaradClient } from "../../client/index.ts";
import { createTopic, highWatermarks, readAll, waitFor } from "./harness/client.ts";
import { type FaultProxy, isProduceBatch, startFaultProxy } from "./harness/fault-proxy.ts";
import { freePort, type RunningNarad, startNarad } from "./harness/process.ts";

const records = 3000;
const dropRate = 0.2;

/** Waits until the topic's HWMs reach `atLeast` and stop moving, then counts every record by payload id. */
async function countAll(url: string, topic: string, atLeast: number): Promise<Map<string, number>> {
  let last = -1;
  await waitFor(`${topic}: ${atLeast} records visible and stable`, 90_000, async () => {
    const total = (await highWatermarks(url, topic)).reduce((a, b) => a + b, 0);
    const stable = total === last;
    last = total;
    if (total >= atLeast && stable) return true;
    await new Promise((r) => setTimeout(r, 300));
    return undefined;
  });
  const counts = new Map<string, number>();
  for (const m of await readAll(url, topic)) {
    const id = (m.payload as { id: string }).id;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

describe("idempotent producer under dropped responses and kill -9", () => {
  let broker: RunningNarad | undefined;
  let proxy: FaultProxy | undefined;
  let client: NaradClient | undefined;
  afterAll(async () => {
    await client?.close().catch(() => {});
    await proxy?.close();
    await broker?.stop();
    if (broker) rmSync(broker.dataDir, { recursive: true, force: true });
  });

  it(`delivers ${records} records exactly once; a plain producer duplicates`, async () => {
    const port = await freePort();
    broker = await startNarad({ port, keepData: true });
    const dataDir = broker.dataDir;
    await createTopic(broker.url, "idem", 4);
    await createTopic(broker.url, "plain", 4);
    // Drops ~dropRate of the answers to stored produce-batches (the client retries them).
    proxy = await startFaultProxy(broker.url, {
      dropAnswer: (r, status) =>
        isProduceBatch(r) && (status === 200 || status === 202) && Math.random() < dropRate,
    });
    client = new NaradClient({ urls: [proxy.url], retries: 200, backoffMs: 20, timeoutMs: 10_000 });
    const idem = client.producer("idem", { idempotent: true, batchSize: 25, lingerMs: 2 });
    const plain = client.producer("plain", { batchSize: 25, lingerMs: 2 });

    let restart: Promise<void> | undefined;
    for (let i = 0; i < records; i++) {
      const id = `m${i}`;
      await idem.send({ id }, { key: id });
      await plain.send({ id }, { key: id });
      if (i === Math.floor(records / 2)) {
        restart = (async () => {
          await broker!.kill9();
          broker = await startNarad({ port, dataDir, keepData: true });
        })();
      }
    }
    await restart;
    await idem.flush();
    await plain.flush();

    const idemCounts = await countAll(broker.url, "idem", records);
    const plainCounts = await countAll(broker.url, "plain", records);
    const tally = (counts: Map<string, number>) => {
      let missing = 0;
      let duplicates = 0;
      for (let i = 0; i < records; i++) {
        const c = counts.get(`m${i}`) ?? 0;
        if (c === 0) missing++;
        else duplicates += c - 1;
      }
      return { missing, duplicates, distinct: counts.size };
    };
    const a = tally(idemCounts);
    const b = tally(plainCounts);
    console.log(
      `idempotent test: dropped responses=${proxy.dropped} idempotent missing=${a.missing} duplicates=${a.duplicates}; ` +
        `plain missing=${b.missing} duplicates=${b.duplicates}`,
    );
    expect(proxy.dropped).toBeGreaterThan(0);
    expect(a).toEqual({ missing: 0, duplicates: 0, distinct: records });
    expect(b.missing).toBe(0);
    expect(b.duplicates).toBeGreaterThan(0);
  });
});

describe("idempotent producer: five batches in flight, re-init, fencing (real broker)", () => {
  let broker: RunningNarad | undefined;
  let proxy: FaultProxy | undefined;
  const clients: NaradClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await proxy?.close();
    await broker?.stop();
    if (broker) rmSync(broker.dataDir, { recursive: true, force: true });
  });

  /** Every id of `sent` stored once, and within each partition in the order it was sent. */
  async function expectOnceInOrder(
    url: string,
    topic: string,
    sent: Array<{ id: string; partition: number }>,
  ) {
    await countAll(url, topic, sent.length);
    const stored = await readAll(url, topic);
    const byPartition = new Map<number, string[]>();
    for (const m of stored) {
      const list = byPartition.get(m.partition) ?? [];
      list.push((m.payload as { id: string }).id);
      byPartition.set(m.partition, list);
    }
    const want = new Map<number, string[]>();
    for (const s of sent) want.set(s.partition, [...(want.get(s.partition) ?? []), s.id]);
    for (const [p, ids] of want) expect(byPartition.get(p) ?? [], `partition ${p}`).toEqual(ids);
    expect(stored.length).toBe(sent.length);
  }

  it("a proxy that reorders requests and drops answers: every record once, in send order per partition", async () => {
    broker = await startNarad({ keepData: true });
    await createTopic(broker.url, "inflight", 3);
    proxy = await startFaultProxy(broker.url, {
      // Produce-batches reach the broker in another order than they were sent...
      delayRequest: (r) => (isProduceBatch(r) ? Math.floor(Math.random() * 40) : 0),
      // ...and some answers are lost after the owner committed the batch.
      dropAnswer: (r, status) => isProduceBatch(r) && status === 200 && Math.random() < 0.1,
    });
    const client = new NaradClient({ urls: [proxy.url], retries: 100, backoffMs: 10, timeoutMs: 10_000 });
    clients.push(client);
    const p = client.producer("inflight", { idempotent: true, batchSize: 10, lingerMs: 1 });
    const sent: Array<{ id: string; partition: number }> = [];
    const deliveries: Array<Promise<unknown>> = [];
    for (let i = 0; i < 1500; i++) {
      const id = `f${i}`;
      const s = await p.send({ id }, { key: id });
      sent.push({ id, partition: s.partition });
      deliveries.push(s.delivered);
    }
    await p.flush();
    await Promise.all(deliveries);
    const m = p.metrics;
    console.log(
      `in-flight test: maxInFlightSeen=${m.maxInFlightSeen} retried=${m.recordsRetried} reinits=${m.reinits} ` +
        `proxy delayed=${proxy.delayed} dropped=${proxy.dropped} maxConcurrent=${proxy.maxConcurrent}`,
    );
    expect(m.maxInFlightSeen).toBeGreaterThan(1);
    expect(m.maxInFlightSeen).toBeLessThanOrEqual(5);
    expect(proxy.dropped).toBeGreaterThan(0);
    expect(m.recordsFailed).toBe(0);
    // Overtaken batches are waited for, not mistaken for a gap: no identity was spent.
    expect(m.reinits).toBe(0);
    await expectOnceInOrder(broker.url, "inflight", sent);
  });

  it("the registry lost (its file deleted, kill -9): the client re-initialises and stores every record once", async () => {
    const port = broker!.port;
    await createTopic(broker!.url, "lost", 2);
    const client = new NaradClient({ urls: [broker!.url], retries: 100, backoffMs: 20, timeoutMs: 10_000 });
    clients.push(client);
    const p = client.producer("lost", { idempotent: true, batchSize: 10, lingerMs: 1 });
    const sent: Array<{ id: string; partition: number }> = [];
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const id = `l${i}`;
        sent.push({ id, partition: (await p.send({ id }, { key: id })).partition });
      }
      await p.flush();
    };
    await send(0, 200);
    const before = p.identity;
    const dataDir = broker!.dataDir;
    await broker!.kill9();
    rmSync(join(dataDir, "metastore", "producers.json"));
    broker = await startNarad({ port, dataDir, keepData: true });
    await send(200, 400);
    expect(p.metrics.reinits).toBe(1);
    expect(p.identity?.producerId).not.toBe(before?.producerId);
    expect(p.metrics.recordsFailed).toBe(0);
    await expectOnceInOrder(broker.url, "lost", sent);
  });

  it("two clients with one name: the first is fenced, told so, and stores nothing after the fence", async () => {
    await createTopic(broker!.url, "twins", 2);
    const c1 = new NaradClient({ urls: [broker!.url], retries: 5, backoffMs: 20 });
    const c2 = new NaradClient({ urls: [broker!.url], retries: 5, backoffMs: 20 });
    clients.push(c1, c2);
    const first = c1.producer("twins", { idempotent: true, producerName: "twin", lingerMs: 0 });
    await (await first.send({ id: "a0" }, { partition: 0 })).delivered;
    const second = c2.producer("twins", { idempotent: true, producerName: "twin", lingerMs: 0 });
    await second.init();
    expect(second.identity?.epoch).toBe((first.identity?.epoch ?? -1) + 1);
    // Partition 1: the new instance never wrote it; the registry's epoch fences the old one there too.
    const late = await (await first.send({ id: "a1" }, { partition: 1 })).delivered.catch((e: unknown) => e);
    expect(late).toBeInstanceOf(FencedProducerError);
    await expect(first.send({ id: "a2" }, { partition: 0 })).rejects.toBeInstanceOf(FencedProducerError);
    expect(first.metrics.reinits).toBe(0);
    await (await second.send({ id: "b0" }, { partition: 0 })).delivered;
    await countAll(broker!.url, "twins", 2);
    const ids = (await readAll(broker!.url, "twins")).map((m) => (m.payload as { id: string }).id).sort();
    expect(ids).toEqual(["a0", "b0"]);
  });
});
