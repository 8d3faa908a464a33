// The client library against the real `narad serve` process: the batching
// producer, and the queue consumer's run() with acks, nacks and lease
// extension.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  NaradClient,
  type ReceivedMessage,
  TopicExistsError,
  TopicNotFoundError,
} from "../../client/index.ts";
import { partitionForKey } from "../src/core/partitioner.ts";
import { readAll, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

let narad: RunningNarad;
let client: NaradClient;

beforeAll(async () => {
  narad = await startNarad();
  client = new NaradClient({ url: narad.url, timeoutMs: 10_000, retries: 5 });
});

afterAll(async () => {
  await client?.close();
  await narad?.stop();
});

describe("client against a real broker", () => {
  it("10,000 records through the producer are all visible exactly once, keys where the broker puts them", async () => {
    await client.topics.create("bulk", { partitions: 4 });
    const producer = client.producer("bulk", { batchSize: 500, lingerMs: 5, maxBufferedRecords: 2000 });
    const n = 10_000;
    const delivered: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const sent = await producer.send({ i }, i % 2 === 0 ? { key: `user-${i % 97}` } : {});
      delivered.push(sent.delivered);
    }
    await producer.close();
    await Promise.all(delivered);
    const records = await waitFor("all records visible", 30_000, async () => {
      const all = await readAll(narad.url, "bulk");
      return all.length >= n ? all : undefined;
    });
    expect(records).toHaveLength(n);
    const seen = new Set<number>();
    for (const r of records) {
      const i = (r.payload as { i: number }).i;
      expect(seen.has(i)).toBe(false);
      seen.add(i);
      if (i % 2 === 0) expect(r.partition).toBe(partitionForKey(Buffer.from(`user-${i % 97}`), 4));
    }
    expect(seen.size).toBe(n);
    // All four partitions got keyless records (sticky per batch, rotating).
    expect(new Set(records.map((r) => r.partition)).size).toBe(4);
  });

  it("consumer.run acks everything, extends the lease of a slow handler, redelivers a failed message once", async () => {
    await client.topics.create("work", { partitions: 2, visibilityTimeoutMs: 600 });
    const producer = client.producer("work", { lingerMs: 2 });
    const n = 200;
    for (let i = 0; i < n; i++) await producer.send(String(i));
    await producer.close();

    const deliveries = new Map<string, number>();
    const errors: unknown[] = [];
    const consumer = client.consumer("work", {
      group: "workers",
      waitMs: 500,
      onError: (e) => errors.push(e),
    });
    let thrown = false;
    const done = consumer.run(
      async (msg: ReceivedMessage) => {
        const id = msg.payload as number;
        const key = String(id);
        deliveries.set(key, (deliveries.get(key) ?? 0) + 1);
        if (id === 7 && !thrown) {
          thrown = true;
          throw new Error("transient failure");
        }
        // Longer than the 600 ms visibility timeout: only extension keeps the lease.
        if (id === 11) await new Promise((r) => setTimeout(r, 1500));
        if ([...deliveries.keys()].length === n && deliveries.get("7") === 2) consumer.stop();
      },
      { concurrency: 4 },
    );
    await waitFor("every message handled", 30_000, async () =>
      deliveries.size === n && deliveries.get("7") === 2 ? true : undefined,
    );
    consumer.stop();
    await done;
    expect(deliveries.get("7")).toBe(2);
    expect(deliveries.get("11")).toBe(1);
    expect([...deliveries.values()].filter((c) => c > 1)).toEqual([2]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["transient failure"]);
    // Every ack landed: the group's frontier reaches the end of both partitions.
    await waitFor("lag 0", 10_000, async () => {
      const groups = await client.topics.groups("work");
      const g = groups.find((x) => x.name === "workers");
      return g !== undefined && g.lag === 0 && g.partitions.every((p) => p.inFlight === 0) ? true : undefined;
    });
  });

  it("for await over the consumer, manual ack; typed error for an unknown topic", async () => {
    await client.topics.create("iter", { partitions: 1 });
    await client.produce("iter", { hello: "world" }, { key: "k1" });
    const consumer = client.consumer("iter", { waitMs: 2000 });
    for await (const msg of consumer) {
      expect(msg.payload).toEqual({ hello: "world" });
      expect(msg.key).toBe("k1");
      await msg.ack();
      consumer.stop();
    }
    expect(await client.replay("iter", 0, 0)).toMatchObject({ offset: 0, payload: { hello: "world" } });
    expect(await client.replay("iter", 0, 1)).toBeUndefined();
    const p = client.producer("nope");
    await expect(p.send("x")).rejects.toBeInstanceOf(TopicNotFoundError);
    await expect(client.consumer("nope").run(() => {})).rejects.toBeInstanceOf(TopicNotFoundError);
  });

  it("typed errors come from the broker's codes", async () => {
    await client.topics.create("coded", { partitions: 1 });
    await expect(client.topics.create("coded")).rejects.toBeInstanceOf(TopicExistsError);
    // A group that does not exist on a topic that does: not TopicNotFoundError.
    const nf = await client.topics.deleteGroup("coded", "ghost").catch((e: unknown) => e);
    expect(nf).not.toBeInstanceOf(TopicNotFoundError);
    expect(nf).toMatchObject({ status: 404, code: "NOT_FOUND" });
    await expect(client.topics.get("absent")).rejects.toMatchObject({
      status: 404,
      code: "TOPIC_NOT_FOUND",
      topic: "absent",
    });
    // The raw answer the client mapped: message and code side by side.
    const raw = await fetch(`${narad.url}/v1/topics/coded/produce?kye=a`, { method: "POST", body: "m" });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ code: "unknown_query_parameter" });
  });
});
