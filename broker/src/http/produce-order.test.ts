// Characterizes the produce pipeline's order of checks (produce/pipeline.ts)
// against a real in-process broker (WAL, logs, dispatcher, file metastore;
// fastify inject): when a request breaks several rules at once, the one a
// client is told about must not change. Also the answer shapes of both routes
// per acks mode, and an idempotent batch's per-partition sequences.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InjectOptions } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { type RunningBroker, startBroker } from "../node.ts";

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
  raw: string;
}

type Inject = InjectOptions & { method: "POST" | "GET"; url: string };

const ndjson = { "content-type": "application/x-ndjson" };
const lines = (...recs: object[]): string => recs.map((r) => JSON.stringify(r)).join("\n");

describe("produce: order of checks and answer shapes", () => {
  let broker: RunningBroker;
  let dir: string;
  let producer: { id: string; epoch: number };

  const ask = async (opts: Inject): Promise<Answer> => {
    const res = await broker.app.inject(opts);
    return {
      status: res.statusCode,
      headers: res.headers,
      raw: res.body,
      body: res.body === "" ? undefined : JSON.parse(res.body),
    };
  };
  const post = (url: string, payload: string, headers: Record<string, string> = {}) =>
    ask({ method: "POST", url, payload, headers });
  const refusal = (a: Answer) => ({ status: a.status, code: (a.body as { code?: unknown })?.code });
  const message = (a: Answer): string => String((a.body as { error?: unknown }).error);
  const idHeaders = (seq: number, epoch = producer.epoch) => ({
    "narad-producer-id": producer.id,
    "narad-producer-epoch": String(epoch),
    "narad-producer-seq": String(seq),
  });
  const createTopic = async (name: string, extra: object = {}) => {
    const r = await post("/v1/topics", JSON.stringify({ name, partitions: 2, ...extra }), {
      "content-type": "application/json",
    });
    expect(r.status).toBe(201);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "narad-produce-order-"));
    const config = loadConfig(
      [
        "--data-dir",
        dir,
        "--addr",
        "127.0.0.1:0",
        "--max-body-bytes",
        "4096",
        "--batch-max-records",
        "4",
        "--topic-rate-limit",
        "1",
        "--topic-rate-burst",
        "12",
      ],
      {},
      "node-a",
    );
    broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    for (const name of ["t", "idem", "shapes", "limits"]) await createTopic(name);
    const schema = { type: "object", properties: { id: { type: "integer" } } };
    for (const name of ["typed", "typed2"]) await createTopic(name, { schema });
    const p = await ask({ method: "POST", url: "/v1/producers" });
    expect(p.status).toBe(201);
    const pb = p.body as { producer_id: string; epoch: number };
    producer = { id: pb.producer_id, epoch: pb.epoch };
  });

  afterAll(async () => {
    await broker?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the body limit wins over an unknown topic and a bad acks (413 before the handler)", async () => {
    const a = await post("/v1/topics/missing/produce?acks=2", "x".repeat(5000));
    expect(refusal(a)).toEqual({ status: 413, code: "payload_too_large" });
  });

  for (const route of ["produce", "produce-batch"]) {
    it(`${route}: acks is parsed before the producer headers and the topic`, async () => {
      const a = await post(`/v1/topics/missing/${route}?acks=2`, "m", {
        ...ndjson,
        "narad-producer-id": "bad id!",
      });
      expect(refusal(a)).toEqual({ status: 400, code: "invalid_acks" });
    });

    it(`${route}: malformed producer headers come before the topic lookup`, async () => {
      const a = await post(`/v1/topics/missing/${route}?acks=all`, "m", {
        ...ndjson,
        "narad-producer-id": "p-1",
      });
      expect(refusal(a)).toEqual({ status: 400, code: "bad_request" });
      expect(message(a)).toMatch(/must be sent together/);
    });

    it(`${route}: producer headers without acks=all, then an unissued id, come before the topic lookup`, async () => {
      const wal = await post(`/v1/topics/missing/${route}`, "m", { ...ndjson, ...idHeaders(0) });
      expect(refusal(wal)).toEqual({ status: 400, code: "acks_all_required" });
      const unknown = await post(`/v1/topics/missing/${route}?acks=all`, "m", {
        ...ndjson,
        ...idHeaders(0),
        "narad-producer-id": "p-999999",
      });
      expect(refusal(unknown)).toEqual({ status: 400, code: "unknown_producer_id" });
      const future = await post(`/v1/topics/missing/${route}?acks=all`, "m", {
        ...ndjson,
        ...idHeaders(0, producer.epoch + 1),
      });
      expect(refusal(future)).toEqual({ status: 400, code: "invalid_producer_epoch" });
    });
  }

  it("produce: the topic lookup comes before the partition parameter and the payload", async () => {
    const a = await post("/v1/topics/missing/produce?partition=-1", "");
    expect(refusal(a)).toEqual({ status: 404, code: "topic_not_found" });
  });

  it("produce: stable partition, then partition range, then the empty message", async () => {
    const unpinned = await post("/v1/topics/t/produce?acks=all", "", idHeaders(0));
    expect(refusal(unpinned)).toEqual({ status: 400, code: "bad_request" });
    expect(message(unpinned)).toMatch(/needs a key or an explicit partition/);
    const outOfRange = await post("/v1/topics/t/produce?partition=7", "");
    expect(refusal(outOfRange)).toEqual({ status: 400, code: "bad_request" });
    expect(message(outOfRange)).not.toMatch(/message required/);
    const empty = await post("/v1/topics/typed/produce", "");
    expect(refusal(empty)).toEqual({ status: 400, code: "bad_request" });
    expect(message(empty)).toBe("message required");
  });

  it("produce-batch: the topic lookup comes before the content type, the content type before decoding", async () => {
    const missing = await post("/v1/topics/missing/produce-batch", "m", { "content-type": "text/plain" });
    expect(refusal(missing)).toEqual({ status: 404, code: "topic_not_found" });
    const type = await post("/v1/topics/t/produce-batch", "", { "content-type": "text/plain" });
    expect(refusal(type)).toEqual({ status: 415, code: "unsupported_media_type" });
    const empty = await post("/v1/topics/t/produce-batch", "", ndjson);
    expect(refusal(empty)).toEqual({ status: 400, code: "bad_request" });
    expect(message(empty)).toBe("batch holds no records");
  });

  it("produce-batch: over --batch-max-records is 413 and counted as a batch_records refusal", async () => {
    const recs = [1, 2, 3, 4, 5].map((i) => ({ key: `k${i}`, payload: "x" }));
    const a = await post("/v1/topics/t/produce-batch", lines(...recs), ndjson);
    expect(refusal(a)).toEqual({ status: 413, code: "payload_too_large" });
    const metrics = await broker.app.inject({ method: "GET", url: "/metrics" });
    expect(metrics.body).toMatch(/narad_limit_refusals_total\{limit="batch_records"\} [1-9]/);
  });

  it("produce-batch: records are checked in order, each for a stable partition, then its partition", async () => {
    const h = { ...ndjson, ...idHeaders(0) };
    const url = "/v1/topics/idem/produce-batch?acks=all";
    const unpinnedFirst = await post(url, lines({ payload: "a" }, { partition: 9, payload: "b" }), h);
    expect(message(unpinnedFirst)).toMatch(/needs a key or an explicit partition/);
    const rangeFirst = await post(url, lines({ partition: 9, payload: "a" }, { payload: "b" }), h);
    expect(refusal(rangeFirst)).toEqual({ status: 400, code: "bad_request" });
    expect(message(rangeFirst)).not.toMatch(/needs a key/);
  });

  it("rate limits come before the schema; the schema names the batch record", async () => {
    const bad = { payload: { id: "x" } };
    const good = { payload: { id: 1 } };
    // The topic's bucket (burst 12, 1/s) is emptied by valid records, then a batch that also breaks the schema comes.
    for (let i = 0; i < 3; i++) {
      const spent = await post("/v1/topics/typed/produce-batch", lines(good, good, good, good), ndjson);
      expect(spent.status).toBe(202);
    }
    const limited = await post("/v1/topics/typed/produce-batch", lines(bad, bad), ndjson);
    expect(refusal(limited)).toEqual({ status: 429, code: "rate_limited" });
    expect(limited.headers["retry-after"]).toBeDefined();
    const named = await post("/v1/topics/typed2/produce-batch", lines(good, bad), ndjson);
    expect(refusal(named)).toEqual({ status: 400, code: "schema_violation" });
    expect(message(named)).toMatch(/^batch record 2 of 2 does not match the schema of topic "typed2"/);
    const single = await post("/v1/topics/typed2/produce", '{"id":"x"}');
    expect(message(single)).toMatch(/^message does not match the schema of topic "typed2"/);
  });

  it("answers each acks mode in its route's shape", async () => {
    const one = (acks: string) => post(`/v1/topics/shapes/produce?key=k&acks=${acks}`, "m");
    const two = (acks: string) =>
      post(
        `/v1/topics/shapes/produce-batch?acks=${acks}`,
        lines({ partition: 0, payload: "a" }, { partition: 1, payload: "b" }),
        ndjson,
      );
    for (const acks of ["0", "wal"]) {
      const a = await one(acks);
      expect({ status: a.status, raw: a.raw }).toEqual({ status: 202, raw: "" });
      const b = await two(acks);
      expect({ status: b.status, body: b.body }).toEqual({ status: 202, body: { accepted: 2 } });
    }
    const a = await one("all");
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ partition: expect.any(Number), offset: expect.any(Number) });
    const b = await two("all");
    expect(b.status).toBe(200);
    expect(b.body).toEqual({
      results: [
        { partition: 0, offset: expect.any(Number) },
        { partition: 1, offset: expect.any(Number) },
      ],
    });
  });

  it("an idempotent batch takes sequences per partition, from the header's seq", async () => {
    const batch3 = lines(
      { partition: 0, payload: "a" },
      { partition: 1, payload: "b" },
      { partition: 0, payload: "c" },
    );
    const sendBatch = () =>
      post("/v1/topics/limits/produce-batch?acks=all", batch3, { ...ndjson, ...idHeaders(0) });
    const batch = await sendBatch();
    expect(batch.status).toBe(200);
    const results = (batch.body as { results: Array<{ partition: number; offset: number }> }).results;
    expect(results.map((r) => r.partition)).toEqual([0, 1, 0]);
    expect(results[2]!.offset).toBe(results[0]!.offset + 1);
    // Partition 0 used seqs 0 and 1, partition 1 only 0: seq 2 is next on 0, a gap on 1.
    const next0 = await post("/v1/topics/limits/produce?partition=0&acks=all", "d", idHeaders(2));
    expect(next0.status).toBe(200);
    expect(next0.body).toEqual({ partition: 0, offset: results[2]!.offset + 1 });
    const gap1 = await post("/v1/topics/limits/produce?partition=1&acks=all", "e", idHeaders(2));
    expect(refusal(gap1)).toEqual({ status: 409, code: "out_of_order_sequence" });
    // A retry of the batch is answered with its original result, nothing stored twice.
    const retry = await sendBatch();
    expect(retry.status).toBe(200);
    expect((retry.body as { results: unknown[] }).results).toEqual(results);
  });

  it("a draining node without peers refuses first, before acks, identity and topic", async () => {
    expect((await ask({ method: "POST", url: "/admin/v1/drain" })).status).toBe(200);
    for (const route of ["produce", "produce-batch"]) {
      const a = await post(`/v1/topics/missing/${route}?acks=2`, "m", {
        ...ndjson,
        "narad-producer-id": "p-1",
      });
      expect(refusal(a)).toEqual({ status: 503, code: "draining" });
    }
  });
});
