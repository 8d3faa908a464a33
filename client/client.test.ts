import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { decodeBinaryBatch, partitionForKey } from "../packages/wire/src/index.ts";
import {
  BadRequestError,
  BufferFullError,
  DeliveryInDoubtError,
  FencedProducerError,
  NaradClient,
  NaradError,
  OffsetExpiredError,
  OutOfOrderSequenceError,
  PayloadTooLargeError,
  StaleReceiptError,
  TopicExistsError,
  TopicNotFoundError,
  UnavailableError,
} from "./index.ts";
import {
  type FakeBroker,
  json,
  type SeenRequest,
  startFakeBroker,
  topicJson,
} from "./testing/fake-broker.ts";

const fakes: FakeBroker[] = [];
const clients: NaradClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

/** A fake with topic "t" (3 partitions) that answers produce-batch with `onBatch`. */
async function fakeWithTopic(
  onBatch: (req: SeenRequest, res: ServerResponse) => void | Promise<void> = (q, res) =>
    json(res, 202, { accepted: decodeBinaryBatch(q.body, 1 << 20).length }),
): Promise<FakeBroker> {
  const f = await startFakeBroker((q, res) => {
    if (q.method === "GET" && q.path === "/v1/topics/t") return json(res, 200, topicJson("t", 3));
    if (q.path === "/v1/topics/t/produce-batch") return onBatch(q, res);
    if (q.method === "POST" && q.path === "/v1/producers") {
      const name = (JSON.parse(q.body.toString("utf8") || "{}") as { name?: string }).name;
      return json(res, 201, { producer_id: name === undefined ? "p-7" : `p-${name}`, epoch: 3 });
    }
    return json(res, 404, { error: `no route for ${q.method} ${q.path}` });
  });
  fakes.push(f);
  return f;
}

function client(urls: string[], opts: { retries?: number; backoffMs?: number } = {}): NaradClient {
  const c = new NaradClient({ urls, timeoutMs: 2000, ...opts });
  clients.push(c);
  return c;
}

const batches = (f: FakeBroker) =>
  f.requests.filter((r) => r.path.endsWith("/produce-batch")).map((r) => decodeBinaryBatch(r.body, 1 << 20));

describe("Producer", () => {
  it("batches by size, hashes keys like the broker, keeps keyless records of one batch together", async () => {
    const f = await fakeWithTopic();
    const p = client([f.url]).producer("t", { batchSize: 10, lingerMs: 10_000 });
    const sent = [];
    for (let i = 0; i < 20; i++) sent.push(await p.send(`m${i}`));
    // Two full batches went out without waiting for the linger.
    await Promise.all(sent.map((s) => s.delivered));
    expect(batches(f).map((b) => b.length)).toEqual([10, 10]);
    for (const b of batches(f)) expect(new Set(b.map((e) => e.partition)).size).toBe(1);
    // Keyless records stick to one partition until a batch of them succeeded, then rotate.
    expect(batches(f)[0]?.[0]?.partition).toBe(batches(f)[1]?.[0]?.partition);
    const after = await p.send("z");
    expect(after.partition).not.toBe(batches(f)[0]?.[0]?.partition);

    for (const key of ["user-1", "user-2", "user-3", "user-4"]) {
      const s = await p.send("x", { key });
      expect(s.partition).toBe(partitionForKey(Buffer.from(key), 3));
    }
    const pinned = await p.send("y", { partition: 2 });
    expect(pinned.partition).toBe(2);
    await p.flush();
    const later = batches(f).slice(2).flat();
    expect(later).toHaveLength(6);
    for (const e of later) {
      if (e.key.length > 0) expect(e.partition).toBe(partitionForKey(e.key, 3));
    }
    await expect(p.send("z", { partition: 3 })).rejects.toBeInstanceOf(BadRequestError);
    await expect(p.send(Buffer.alloc(2 * 1024 * 1024))).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it("sends a partial batch after lingerMs", async () => {
    const f = await fakeWithTopic();
    const p = client([f.url]).producer("t", { batchSize: 1000, lingerMs: 150 });
    const t0 = Date.now();
    const s = await p.send("a");
    await p.send("b");
    await new Promise((r) => setTimeout(r, 60));
    expect(batches(f)).toHaveLength(0);
    await s.delivered;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(batches(f).map((b) => b.length)).toEqual([2]);
  });

  it("applies backpressure: send waits while maxBufferedRecords are buffered", async () => {
    const held: Array<() => void> = [];
    const f = await fakeWithTopic((q, res) => {
      held.push(() => json(res, 202, { accepted: decodeBinaryBatch(q.body, 1 << 20).length }));
    });
    const p = client([f.url]).producer("t", { batchSize: 2, lingerMs: 0, maxBufferedRecords: 4 });
    for (let i = 0; i < 4; i++) await p.send(`m${i}`, { partition: i % 2 });
    expect(p.buffered).toBe(4);
    let fifthBuffered = false;
    const fifth = p.send("m4").then((s) => {
      fifthBuffered = true;
      return s;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(fifthBuffered).toBe(false);
    while (held.length < 2) await new Promise((r) => setTimeout(r, 10));
    held.shift()?.();
    await fifth;
    expect(fifthBuffered).toBe(true);
    expect(p.buffered).toBeLessThanOrEqual(4);
    // Answer everything still held, then flush.
    const drain = setInterval(() => {
      for (const h of held.splice(0)) h();
    }, 5);
    await p.flush();
    clearInterval(drain);
    expect(batches(f).flat()).toHaveLength(5);
  });

  it("retries 503 after Retry-After and 429 / dropped connections with backoff", async () => {
    let n = 0;
    const f = await fakeWithTopic((q, res) => {
      n++;
      if (n === 1) return json(res, 503, { error: "draining" }, { "retry-after": "1" });
      if (n === 2) return json(res, 429, { error: "slow down" });
      if (n === 3) return void res.socket?.destroy();
      json(res, 202, { accepted: decodeBinaryBatch(q.body, 1 << 20).length });
    });
    const p = client([f.url], { retries: 5, backoffMs: 20 }).producer("t", { lingerMs: 0 });
    const s = await p.send("hello");
    await s.delivered;
    const times = f.requests.filter((r) => r.path.endsWith("/produce-batch")).map((r) => r.at);
    expect(times).toHaveLength(4);
    expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(950);
    expect((times[2] as number) - (times[1] as number)).toBeLessThan(900);
  });

  it("gives up after `retries` with UnavailableError carrying retryAfterMs; flush reports it", async () => {
    const f = await fakeWithTopic((_q, res) =>
      json(res, 503, { error: "WAL failed" }, { "retry-after": "0" }),
    );
    const p = client([f.url], { retries: 2, backoffMs: 5 }).producer("t", { lingerMs: 0 });
    const s = await p.send("x");
    const err = await s.delivered.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as UnavailableError).retryAfterMs).toBe(0);
    expect((err as UnavailableError).hint).toMatch(/retry/);
    expect(batches(f)).toHaveLength(3);
    await expect(p.flush()).rejects.toBeInstanceOf(UnavailableError);
    await p.flush(); // reported once
  });

  it("fails over to the next url when a broker answers 503 or is down", async () => {
    const draining = await fakeWithTopic((_q, res) =>
      json(res, 503, { error: "draining" }, { "retry-after": "5" }),
    );
    const ok = await fakeWithTopic();
    const dead = await startFakeBroker();
    const deadUrl = dead.url;
    await dead.close();
    const c = client([deadUrl, draining.url, ok.url], { retries: 3, backoffMs: 10 });
    const p = c.producer("t", { lingerMs: 0 });
    const t0 = Date.now();
    await (await p.send("a")).delivered;
    await (await p.send("b")).delivered;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(batches(draining)).toHaveLength(1);
    expect(batches(ok)).toHaveLength(2);
  });
});

describe("typed errors", () => {
  it("maps statuses to errors with a hint (an answer without a code: Narad v1, an older broker)", async () => {
    const f = await startFakeBroker((q, res) => {
      if (q.path === "/v1/topics/missing") return json(res, 404, { error: 'topic "missing" not found' });
      if (q.path.endsWith("/produce")) return json(res, 413, { error: "request body too large" });
      if (q.path.endsWith("/ack")) return json(res, 410, { error: "receipt handle is stale" });
      return json(res, 400, { error: "partitions must be between 1 and 108" });
    });
    fakes.push(f);
    const c = client([f.url]);
    const nf = await c.topics.get("missing").catch((e: unknown) => e);
    expect(nf).toBeInstanceOf(TopicNotFoundError);
    expect((nf as TopicNotFoundError).status).toBe(404);
    expect((nf as TopicNotFoundError).code).toBe("TOPIC_NOT_FOUND");
    expect((nf as TopicNotFoundError).hint).toContain("narad topic add missing");
    await expect(c.produce("t", "x")).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(c.topics.create("t", { partitions: 500 })).rejects.toMatchObject({
      status: 400,
      code: "BAD_REQUEST",
      message: "partitions must be between 1 and 108",
    });
    // A stale receipt: the consumer's ack.
    f.handle = (q, res) => {
      if (q.path.endsWith("/consume"))
        return json(res, 200, {
          topic: "t",
          partition: 0,
          offset: 0,
          key: "k",
          timestamp: 1,
          timestamp_ms: 1000,
          receipt_handle: "0:0:abc.1",
          payload: { a: 1 },
        });
      return json(res, 410, { error: "receipt handle is stale" });
    };
    const consumer = c.consumer("t", { waitMs: 100 });
    const msg = await consumer.poll();
    expect(msg?.payload).toEqual({ a: 1 });
    expect(msg?.receiptHandle).toBe("0:0:abc.1");
    await expect(msg?.ack()).rejects.toBeInstanceOf(StaleReceiptError);
    consumer.stop();
  });

  it("maps the body's code, whatever the message says", async () => {
    const f = await startFakeBroker((q, res) => {
      // Messages that would fool the status fallback: the code decides.
      if (q.path === "/v1/topics/renamed")
        return json(res, 404, { error: "no such thing here", code: "topic_not_found" });
      if (q.path === "/v1/topics/g/groups/x")
        return json(res, 404, { error: 'topic "g" not found', code: "not_found" });
      if (q.path === "/v1/topics" && q.method === "POST")
        return json(res, 409, { error: "busy", code: "conflict" });
      if (q.path.endsWith("/produce")) return json(res, 410, { error: "gone", code: "topic_deleted" });
      return json(res, 410, { error: "offset 3 was removed by retention", code: "offset_expired" });
    });
    fakes.push(f);
    const c = client([f.url]);
    const nf = await c.topics.get("renamed").catch((e: unknown) => e);
    expect(nf).toBeInstanceOf(TopicNotFoundError);
    expect((nf as TopicNotFoundError).topic).toBe("renamed");
    await expect(c.topics.deleteGroup("g", "x")).rejects.toMatchObject({ status: 404, code: "NOT_FOUND" });
    const conflict = await c.topics.create("t").catch((e: unknown) => e);
    expect(conflict).not.toBeInstanceOf(TopicExistsError);
    expect(conflict).toMatchObject({ status: 409, code: "CONFLICT" });
    await expect(c.produce("t", "x")).rejects.toMatchObject({ status: 410, code: "TOPIC_DELETED" });
    await expect(c.read("t", 0, 3)).rejects.toBeInstanceOf(OffsetExpiredError);
  });
});

describe("idempotent Producer", () => {
  const stampOf = (r: SeenRequest) => ({
    id: r.headers["narad-producer-id"],
    epoch: r.headers["narad-producer-epoch"],
    seq: r.headers["narad-producer-seq"],
    n: decodeBinaryBatch(r.body, 1 << 20).length,
    partition: decodeBinaryBatch(r.body, 1 << 20)[0]?.partition,
  });

  /** acks=all answer: offsets base.. for the batch's records. */
  const acked = (q: SeenRequest, res: ServerResponse, base = 0) =>
    json(res, 200, {
      results: decodeBinaryBatch(q.body, 1 << 20).map((e, i) => ({
        partition: e.partition,
        offset: base + i,
      })),
    });

  it("gets its identity from the broker, stamps per-partition sequences, retries with the same ones", async () => {
    let n = 0;
    const f = await fakeWithTopic((q, res) => {
      n++;
      // The second request is "lost": the connection drops after the broker got it.
      if (n === 2) return void res.socket?.destroy();
      acked(q, res, 100);
    });
    const p = client([f.url], { retries: 3, backoffMs: 5 }).producer("t", {
      idempotent: true,
      producerName: "orders",
      batchSize: 2,
      lingerMs: 10_000,
    });
    const sent = [];
    for (let i = 0; i < 4; i++) sent.push(await p.send(`a${i}`, { partition: 0 }));
    for (let i = 0; i < 2; i++) sent.push(await p.send(`b${i}`, { partition: 2 }));
    const deliveries = await Promise.all(sent.map((s) => s.delivered));
    expect(p.identity).toEqual({ producerId: "p-orders", epoch: 3 });
    expect(deliveries.every((d) => typeof d.offset === "number")).toBe(true);
    const reqs = f.requests.filter((r) => r.path.endsWith("/produce-batch"));
    expect(reqs.every((r) => r.query.get("acks") === "all")).toBe(true);
    const stamps = reqs.map(stampOf);
    const of = (part: number) => stamps.filter((s) => s.partition === part).map((s) => [s.seq, s.n]);
    expect(new Set(of(0).map(String))).toEqual(new Set(["0,2", "2,2"]));
    expect(new Set(of(2).map(String))).toEqual(new Set(["0,2"]));
    expect(stamps.length).toBe(4); // one retried with the same seq
    expect(new Set(stamps.map((s) => `${s.id}/${s.epoch}`))).toEqual(new Set(["p-orders/3"]));
    expect(p.metrics.recordsRetried).toBe(2);
    expect(p.metrics.recordsSent).toBe(6);
  });

  it("advances sequences only after success: a failed batch's re-send reuses its sequences", async () => {
    let fail = true;
    const f = await fakeWithTopic((q, res) => {
      if (fail) return json(res, 503, { error: "down" });
      acked(q, res);
    });
    const p = client([f.url], { retries: 0, backoffMs: 1 }).producer("t", { idempotent: true, lingerMs: 0 });
    const first = await (await p.send("x", { partition: 1 })).delivered.catch((e: unknown) => e);
    expect(first).toBeInstanceOf(UnavailableError);
    await p.flush().catch(() => {});
    fail = false;
    await (await p.send("x", { partition: 1 })).delivered;
    const seqs = f.requests.filter((r) => r.path.endsWith("/produce-batch")).map((r) => stampOf(r).seq);
    expect(seqs).toEqual(["0", "0"]);
    expect(p.metrics.recordsFailed).toBe(1);
  });

  it("acks: wal sends no acks parameter and resolves without offsets; 0 carries no offset", async () => {
    const f = await fakeWithTopic();
    const c = client([f.url]);
    const wal = c.producer("t", { lingerMs: 0 });
    expect((await (await wal.send("y")).delivered).offset).toBeUndefined();
    const zero = c.producer("t", { lingerMs: 0, acks: "0" });
    expect((await (await zero.send("y")).delivered).offset).toBeUndefined();
    const reqs = f.requests.filter((r) => r.path.endsWith("/produce-batch"));
    expect(reqs[0]!.headers["narad-producer-id"]).toBeUndefined();
    expect(reqs[0]!.query.get("acks")).toBeNull();
    expect(reqs[1]!.query.get("acks")).toBe("0");
    expect(() => c.producer("t", { producerName: "x" })).toThrow(BadRequestError);
    expect(() => c.producer("t", { idempotent: true, acks: "wal" })).toThrow(BadRequestError);
  });

  it("a full buffer raises BufferFullError after maxBlockMs", async () => {
    const f = await fakeWithTopic(() => {}); // never answers
    const p = client([f.url]).producer("t", { maxBufferBytes: 100, maxBlockMs: 50, lingerMs: 0 });
    await p.send("x".repeat(80), { partition: 0 });
    const started = Date.now();
    await expect(p.send("y".repeat(80), { partition: 0 })).rejects.toBeInstanceOf(BufferFullError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(p.metrics.bufferedBytes).toBe(80);
  });

  it("fails a fenced batch with FencedProducerError (by code) and closes the producer", async () => {
    const f = await fakeWithTopic((_q, res) =>
      json(res, 409, { error: "producer fenced: epoch 1 < 2", code: "producer_fenced" }),
    );
    const p = client([f.url]).producer("t", { idempotent: true, lingerMs: 0 });
    const err = await (await p.send("x", { partition: 0 })).delivered.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedProducerError);
    expect((err as FencedProducerError).code).toBe("PRODUCER_FENCED");
    await expect(p.flush()).rejects.toBeInstanceOf(FencedProducerError);
    await expect(p.send("y", { partition: 0 })).rejects.toBeInstanceOf(FencedProducerError);
  });

  it("maps out_of_order_sequence to OutOfOrderSequenceError", async () => {
    const f = await fakeWithTopic((_q, res) =>
      json(res, 409, { error: "out of order", code: "out_of_order_sequence" }),
    );
    const p = client([f.url]).producer("t", { idempotent: true, lingerMs: 0 });
    const err = await (await p.send("x", { partition: 0 })).delivered.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutOfOrderSequenceError);
    // Handled twice by re-initialising (each time from seq 0), then it reaches the application.
    expect(p.metrics.reinits).toBe(2);
    expect(f.requests.filter((r) => r.path === "/v1/producers")).toHaveLength(3);
    expect(f.requests.filter((r) => r.path.endsWith("/produce-batch")).map((r) => stampOf(r).seq)).toEqual([
      "0",
      "0",
      "0",
    ]);
  });

  /**
   * The owner's sequence rule in miniature: per (id, epoch, partition) only
   * the next seq is stored; an exact retry gets its original offsets; anything
   * else is out_of_order_sequence. `log` is what was stored, in order.
   */
  function fakeOwner() {
    const next = new Map<string, number>();
    const offsets = new Map<string, number>();
    const log: string[] = [];
    const decide = (q: SeenRequest): { status: number; body: unknown } => {
      const s = stampOf(q);
      const key = `${s.id}/${s.epoch}/${s.partition}`;
      const seq = Number(s.seq);
      const entries = decodeBinaryBatch(q.body, 1 << 20);
      const want = next.get(key) ?? 0;
      if (seq === want) {
        const base = log.length;
        for (const e of entries) log.push(e.payload.toString("utf8"));
        next.set(key, want + entries.length);
        offsets.set(`${key}/${seq}`, base);
        return {
          status: 200,
          body: { results: entries.map((e, i) => ({ partition: e.partition, offset: base + i })) },
        };
      }
      const base = offsets.get(`${key}/${seq}`);
      if (base !== undefined)
        return {
          status: 200,
          body: { results: entries.map((e, i) => ({ partition: e.partition, offset: base + i })) },
        };
      return { status: 409, body: { error: `seq ${seq}, expected ${want}`, code: "out_of_order_sequence" } };
    };
    const answer = (q: SeenRequest, res: ServerResponse) => {
      const d = decide(q);
      json(res, d.status, d.body);
    };
    return {
      answer,
      decide,
      log,
      forget: () => {
        next.clear();
        offsets.clear();
      },
    };
  }

  it("keeps up to 5 batches of a partition in flight, never 6", async () => {
    const owner = fakeOwner();
    let out = 0;
    let most = 0;
    const held: Array<() => void> = [];
    const f = await fakeWithTopic(async (q, res) => {
      out++;
      most = Math.max(most, out);
      // Hold answers until 5 are out (or a moment passed), then answer in arrival order.
      if (out < 5) await new Promise<void>((r) => held.push(r) && setTimeout(r, 300));
      for (const r of held.splice(0)) r();
      out--;
      owner.answer(q, res);
    });
    const p = client([f.url]).producer("t", { idempotent: true, batchSize: 1, lingerMs: 0 });
    const sent = [];
    for (let i = 0; i < 12; i++) sent.push(await p.send(`r${i}`, { partition: 0 }));
    const d = await Promise.all(sent.map((x) => x.delivered));
    expect(most).toBe(5);
    expect(p.metrics.maxInFlightSeen).toBe(5);
    expect(d.map((x) => x.offset)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(owner.log).toEqual(Array.from({ length: 12 }, (_, i) => `r${i}`));
  });

  it("an overtaken batch (out_of_order while an earlier one is pending) is re-sent after it: order kept", async () => {
    const owner = fakeOwner();
    let n = 0;
    const f = await fakeWithTopic(async (q, res) => {
      // The first batch reaches the owner late: the second one overtakes it.
      if (++n === 1) await new Promise((r) => setTimeout(r, 200));
      owner.answer(q, res);
    });
    const p = client([f.url]).producer("t", { idempotent: true, batchSize: 2, lingerMs: 10_000 });
    const sent = [];
    for (let i = 0; i < 4; i++) sent.push(await p.send(`o${i}`, { partition: 1 }));
    const d = await Promise.all(sent.map((x) => x.delivered));
    expect(d.map((x) => x.offset)).toEqual([0, 1, 2, 3]);
    expect(owner.log).toEqual(["o0", "o1", "o2", "o3"]);
    const seqs = f.requests.filter((r) => r.path.endsWith("/produce-batch")).map((r) => stampOf(r).seq);
    expect(seqs.sort()).toEqual(["0", "2", "2"]); // the overtaking one again, with its own seq
    expect(p.metrics.reinits).toBe(0);
  });

  it("unknown_producer_id: re-initialises (a new id) and re-sends from seq 0", async () => {
    const owner = fakeOwner();
    let inits = 0;
    const f = await startFakeBroker((q, res) => {
      if (q.method === "GET" && q.path === "/v1/topics/t") return json(res, 200, topicJson("t", 3));
      if (q.path === "/v1/producers") return json(res, 201, { producer_id: `p-${++inits}`, epoch: 0 });
      if (stampOf(q).id === "p-1")
        return json(res, 400, { error: "producer id p-1 was not issued", code: "unknown_producer_id" });
      owner.answer(q, res);
    });
    fakes.push(f);
    const p = client([f.url]).producer("t", { idempotent: true, batchSize: 2, lingerMs: 0 });
    const a = await p.send("a", { partition: 0 });
    const b = await p.send("b", { partition: 2 });
    expect((await a.delivered).offset).toBeTypeOf("number");
    expect((await b.delivered).offset).toBeTypeOf("number");
    expect(p.identity).toEqual({ producerId: "p-2", epoch: 0 });
    expect(p.metrics.reinits).toBe(1);
    const stamps = f.requests.filter((r) => r.path.endsWith("/produce-batch")).map(stampOf);
    expect(stamps.filter((s) => s.id === "p-2").map((s) => s.seq)).toEqual(["0", "0"]);
    expect([...owner.log].sort()).toEqual(["a", "b"]);
  });

  it("out_of_order with nothing earlier pending (the owner forgot the producer): next epoch, seq 0, stored once", async () => {
    const owner = fakeOwner();
    let epoch = 3;
    const f = await startFakeBroker((q, res) => {
      if (q.method === "GET" && q.path === "/v1/topics/t") return json(res, 200, topicJson("t", 3));
      if (q.path === "/v1/producers") return json(res, 201, { producer_id: "p-orders", epoch: epoch++ });
      owner.answer(q, res);
    });
    fakes.push(f);
    const p = client([f.url]).producer("t", { idempotent: true, producerName: "orders", lingerMs: 0 });
    await (await p.send("first", { partition: 0 })).delivered;
    owner.forget(); // e.g. evicted after a long idle time: the next seq (1) is now a gap
    const d = await (await p.send("second", { partition: 0 })).delivered;
    expect(d.offset).toBe(1);
    expect(p.identity).toEqual({ producerId: "p-orders", epoch: 4 });
    expect(owner.log).toEqual(["first", "second"]);
    const stamps = f.requests.filter((r) => r.path.endsWith("/produce-batch")).map(stampOf);
    expect(stamps.map((s) => `${s.epoch}:${s.seq}`)).toEqual(["3:0", "3:1", "4:0"]);
  });

  it("a re-init refused (a newer instance holds the name) fences this producer: it does not take the name back", async () => {
    let inits = 0;
    const f = await startFakeBroker((q, res) => {
      if (q.method === "GET" && q.path === "/v1/topics/t") return json(res, 200, topicJson("t", 3));
      if (q.path === "/v1/producers") {
        inits++;
        const body = JSON.parse(q.body.toString("utf8")) as { name?: string; epoch?: number };
        if (body.epoch !== undefined)
          return json(res, 409, { error: "producer fenced: at epoch 9", code: "producer_fenced" });
        return json(res, 201, { producer_id: "p-orders", epoch: 3 });
      }
      json(res, 409, { error: "gap", code: "out_of_order_sequence" });
    });
    fakes.push(f);
    const p = client([f.url]).producer("t", { idempotent: true, producerName: "orders", lingerMs: 0 });
    const err = await (await p.send("x", { partition: 0 })).delivered.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedProducerError);
    const reinit = f.requests.filter((r) => r.path === "/v1/producers").map((r) => r.body.toString("utf8"));
    expect(reinit).toEqual(['{"name":"orders"}', '{"name":"orders","epoch":3}']);
    expect(inits).toBe(2);
    await expect(p.send("y", { partition: 1 })).rejects.toBeInstanceOf(FencedProducerError);
  });

  it("fenced: never re-initialised past; the error surfaces and the producer stays closed", async () => {
    const f = await fakeWithTopic((_q, res) =>
      json(res, 409, { error: "producer fenced: epoch 3 < 4", code: "producer_fenced" }),
    );
    const p = client([f.url]).producer("t", { idempotent: true, producerName: "orders", lingerMs: 0 });
    const err = await (await p.send("x", { partition: 0 })).delivered.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedProducerError);
    await expect(p.send("y", { partition: 1 })).rejects.toBeInstanceOf(FencedProducerError);
    expect(f.requests.filter((r) => r.path === "/v1/producers")).toHaveLength(1);
    expect(p.metrics.reinits).toBe(0);
  });

  describe("a batch that failed in doubt with later batches numbered after it (held, then settled)", () => {
    const sleepMs = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const seqOf = (q: SeenRequest) => stampOf(q).seq;
    /** A fake owner behind faults for the batch at `seq`: drop its answer (stored) or its request (not stored). */
    async function faulty(
      plan: (q: SeenRequest) => "answer" | "dropAnswer" | "dropRequest",
      owner = fakeOwner(),
    ) {
      let epoch = 3;
      const f = await startFakeBroker(async (q, res) => {
        if (q.method === "GET" && q.path === "/v1/topics/t") return json(res, 200, topicJson("t", 3));
        if (q.path === "/v1/producers") return json(res, 201, { producer_id: "p-orders", epoch: epoch++ });
        const what = plan(q);
        if (what === "dropRequest") {
          // Late enough that the next batch is numbered while this one is still out.
          await sleepMs(40);
          return void res.socket?.destroy();
        }
        const d = owner.decide(q);
        if (what === "dropAnswer") {
          await sleepMs(40);
          return void res.socket?.destroy();
        }
        json(res, d.status, d.body);
      });
      fakes.push(f);
      return { f, owner };
    }
    const producer = (f: FakeBroker, deliveryTimeoutMs: number) =>
      client([f.url], { retries: 0, backoffMs: 5 }).producer("t", {
        idempotent: true,
        producerName: "orders",
        batchSize: 1,
        lingerMs: 0,
        deliveryTimeoutMs,
      });

    it("stored (a later batch accepted), its answers lost for a while: its exact retry gets the original offsets", async () => {
      const t0 = Date.now();
      const { f, owner } = await faulty((q) =>
        seqOf(q) === "0" && Date.now() - t0 < 300 ? "dropAnswer" : "answer",
      );
      const p = producer(f, 2000);
      const a = await p.send("k", { partition: 0 });
      const b = await p.send("k+1", { partition: 0 });
      expect((await a.delivered).offset).toBe(0);
      expect((await b.delivered).offset).toBe(1);
      expect(owner.log).toEqual(["k", "k+1"]);
      expect(p.metrics.recordsFailed).toBe(0);
      expect(p.metrics.reinits).toBe(0);
      expect(p.metrics.batchesHeld).toBe(1);
      // Every attempt of k carried its own seq.
      expect(
        f.requests
          .filter((r) => r.path.endsWith("/produce-batch"))
          .map(seqOf)
          .filter((x) => x === "0").length,
      ).toBeGreaterThan(1);
    });

    it("stored, but no answer to its exact retries within the window: resolves with offset null (stored, offsets unknown)", async () => {
      const { f, owner } = await faulty((q) => (seqOf(q) === "0" ? "dropAnswer" : "answer"));
      const p = producer(f, 300);
      const a = await p.send("k", { partition: 0 });
      const b = await p.send("k+1", { partition: 0 });
      const started = Date.now();
      expect(await a.delivered).toEqual({ topic: "t", partition: 0, offset: null });
      expect(Date.now() - started).toBeGreaterThanOrEqual(250); // held for the settle window
      expect((await b.delivered).offset).toBe(1);
      await p.flush();
      expect(owner.log).toEqual(["k", "k+1"]);
    });

    it("not stored (its requests lost for a while, the next batch refused): its exact retry stores it, order kept", async () => {
      const t0 = Date.now();
      const { f, owner } = await faulty((q) =>
        seqOf(q) === "0" && Date.now() - t0 < 300 ? "dropRequest" : "answer",
      );
      const p = producer(f, 2000);
      const a = await p.send("k", { partition: 0 });
      const b = await p.send("k+1", { partition: 0 });
      expect((await a.delivered).offset).toBe(0);
      expect((await b.delivered).offset).toBe(1);
      expect(owner.log).toEqual(["k", "k+1"]);
      expect(p.metrics.reinits).toBe(0);
    });

    it("its exact retry refused with nothing earlier pending: rejected notStored after a re-init; a re-send is stored once", async () => {
      const owner = fakeOwner();
      let forgotten = false;
      const { f } = await faulty((q) => {
        if (seqOf(q) === "1" && stampOf(q).epoch === "3" && !forgotten) {
          if (Date.now() - t0 < 250) return "dropRequest";
          owner.forget(); // e.g. evicted: seq 1 is now a gap, and nothing was stored for it
          forgotten = true;
        }
        return "answer";
      }, owner);
      const p = producer(f, 3000);
      await (await p.send("first", { partition: 0 })).delivered;
      const t0 = Date.now();
      const k = await p.send("k", { partition: 0 });
      const after = await p.send("k+1", { partition: 0 });
      const err = (await k.delivered.catch((e: unknown) => e)) as NaradError;
      expect(err).toBeInstanceOf(OutOfOrderSequenceError);
      expect(err.notStored).toBe(true);
      expect(err.inDoubt).toBe(false);
      expect((await after.delivered).offset).toBe(1);
      expect(p.metrics.reinits).toBe(1);
      await p.flush().catch(() => {});
      await (await p.send("k", { partition: 0 })).delivered; // the application's re-send
      expect(owner.log).toEqual(["first", "k+1", "k"]);
    });

    it("nothing settles it within the window: DeliveryInDoubtError (inDoubt); the next batch refused behind it is notStored", async () => {
      const { f, owner } = await faulty((q) =>
        seqOf(q) === "0" && stampOf(q).epoch === "3" ? "dropRequest" : "answer",
      );
      const p = producer(f, 300);
      const k = await p.send("k", { partition: 0 });
      const after = await p.send("k+1", { partition: 0 });
      const e1 = (await k.delivered.catch((e: unknown) => e)) as NaradError;
      expect(e1).toBeInstanceOf(DeliveryInDoubtError);
      expect(e1.inDoubt).toBe(true);
      expect(e1.code).toBe("DELIVERY_IN_DOUBT");
      const e2 = (await after.delivered.catch((e: unknown) => e)) as NaradError;
      expect(e2.notStored).toBe(true);
      await expect(p.flush()).rejects.toBeInstanceOf(NaradError);
      expect(owner.log).toEqual([]);
    });

    it("fenced while held: stored (k+1 accepted) resolves with offset null, else FencedProducerError inDoubt", async () => {
      let fenced = false;
      const t0 = Date.now();
      const { f, owner } = await faulty((q) => {
        if (fenced) return "answer";
        return seqOf(q) === "0" ? "dropAnswer" : "answer";
      });
      // After k's first lost answer and k+1's acceptance, every request is fenced.
      const inner = f.handle;
      f.handle = async (q, res) => {
        if (q.path.endsWith("/produce-batch") && Date.now() - t0 > 200) {
          fenced = true;
          return json(res, 409, { error: "producer fenced: epoch 3 < 4", code: "producer_fenced" });
        }
        return inner(q, res);
      };
      const p = producer(f, 2000);
      const k = await p.send("k", { partition: 0 });
      const next = await p.send("k+1", { partition: 0 });
      expect((await next.delivered).offset).toBe(1);
      expect(await k.delivered).toEqual({ topic: "t", partition: 0, offset: null });
      expect(owner.log).toEqual(["k", "k+1"]);

      const t1 = Date.now();
      const { f: g } = await faulty((q) => (seqOf(q) === "0" ? "dropRequest" : "answer"));
      const innerG = g.handle;
      g.handle = async (q, res) => {
        if (q.path.endsWith("/produce-batch") && Date.now() - t1 > 200)
          return json(res, 409, { error: "producer fenced: epoch 3 < 4", code: "producer_fenced" });
        return innerG(q, res);
      };
      const q = producer(g, 2000);
      const k2 = await q.send("k", { partition: 0 });
      const next2 = await q.send("k+1", { partition: 0 });
      const e = (await k2.delivered.catch((x: unknown) => x)) as NaradError;
      expect(e).toBeInstanceOf(FencedProducerError);
      expect(e.inDoubt).toBe(true);
      const e2 = (await next2.delivered.catch((x: unknown) => x)) as NaradError;
      expect(e2).toBeInstanceOf(FencedProducerError);
      expect(e2.notStored).toBe(true);
    });

    it("flags: a 4xx refusal is notStored, a lost answer to the last numbered batch is inDoubt (and its seqs rewound)", async () => {
      let n = 0;
      const { f, owner } = await faulty((q) => (++n === 1 && seqOf(q) === "0" ? "dropAnswer" : "answer"));
      const p = producer(f, 2000);
      const e = (await (
        await p.send("x", { partition: 0 })
      ).delivered.catch((x: unknown) => x)) as NaradError;
      expect(e).toBeInstanceOf(UnavailableError);
      expect(e.inDoubt).toBe(true);
      expect((await (await p.send("x", { partition: 0 })).delivered).offset).toBe(0); // recognised
      expect(owner.log).toEqual(["x"]);
      const bad = await fakeWithTopic((_q, res) => json(res, 400, { error: "bad", code: "bad_request" }));
      const q = client([bad.url]).producer("t", { idempotent: true, lingerMs: 0 });
      const e400 = (await (
        await q.send("y", { partition: 0 })
      ).delivered.catch((x: unknown) => x)) as NaradError;
      expect(e400).toBeInstanceOf(BadRequestError);
      expect(e400.notStored).toBe(true);
    });
  });
});
