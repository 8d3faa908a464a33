// Idempotent producers end to end: a real broker process behind a proxy that
// drops some produce-batch responses after the broker stored the batch (the
// client sees a network error and retries), plus one kill -9 and restart of
// the broker mid-run. The idempotent producer must deliver every record
// exactly once; a plain producer in the same run shows the duplicates that
// retries cause without idempotence.

import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { NaradClient } from "../../client/index.ts";
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
