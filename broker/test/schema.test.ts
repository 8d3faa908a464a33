// JSON Schema on topics against a real broker (WAL, dispatcher, partition
// logs, file metastore in a temp dir), driven through fastify's inject:
// create with a schema, produce single and batch (a refused batch stores
// nothing), additive PATCH accepted and incompatible PATCH refused, and the
// schema and its version surviving a restart.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { encodeBinaryBatch } from "../src/core/batch-codec.ts";
import { type RunningBroker, startBroker } from "../src/node.ts";

// Narad (Go)'s e2e schema fixtures.
const schemaV1 = {
  type: "object",
  properties: { id: { type: "integer" }, name: { type: "string" } },
  required: ["id"],
};
const schemaV2Additive = {
  ...schemaV1,
  properties: { ...schemaV1.properties, email: { type: "string" } },
};
const schemaV2TypeChange = { ...schemaV1, properties: { id: { type: "string" }, name: { type: "string" } } };

let dir: string;
let broker: RunningBroker;

async function start(): Promise<void> {
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
}

async function req(method: "GET" | "POST" | "PATCH", url: string, body?: unknown, contentType?: string) {
  const payload = typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const headers = { "content-type": contentType ?? "application/json" };
  const res = await broker.app.inject({ method, url, payload, headers });
  return { status: res.statusCode, text: res.body, json: () => JSON.parse(res.body) };
}

/** Every payload in the topic's partition 0, waiting until `count` are there. */
async function payloads(topic: string, count: number): Promise<unknown[]> {
  for (let i = 0; i < 300; i++) {
    const r = await req("GET", `/v1/topics/${topic}/records?partition=0`);
    const records = r.json().records as Array<{ payload: unknown }>;
    if (records.length >= count) return records.map((m) => m.payload);
    await new Promise((ok) => setTimeout(ok, 10));
  }
  throw new Error(`${count} records not visible in ${topic}`);
}

async function metric(name: string): Promise<string | undefined> {
  const text = (await req("GET", "/metrics")).text;
  return text.split("\n").find((l) => l.startsWith(name));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-schema-"));
  await start();
});

afterAll(async () => {
  await broker?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("topic schemas", () => {
  it("creates a topic with a schema and shows it with its version", async () => {
    const created = await req("POST", "/v1/topics", { name: "users", partitions: 1, schema: schemaV1 });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ name: "users", schema: schemaV1, schema_version: 1 });
    expect((await req("GET", "/v1/topics/users")).json()).toMatchObject({
      schema: schemaV1,
      schema_version: 1,
    });
  });

  it("refuses an invalid schema on create and stores no topic", async () => {
    const r = await req("POST", "/v1/topics", { name: "bad", schema: { type: 123 } });
    expect(r.status).toBe(400);
    expect(r.json().code).toBe("schema_invalid");
    expect((await req("GET", "/v1/topics/bad")).status).toBe(404);
  });

  it("202s a matching message and refuses one that does not (400 schema_violation, counted)", async () => {
    expect((await req("POST", "/v1/topics/users/produce?key=k", '{"id": 42, "name": "valid"}')).status).toBe(
      202,
    );
    const bad = await req("POST", "/v1/topics/users/produce?key=bad", '{"id":"not-an-integer","name":"x"}');
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({
      error: 'message does not match the schema of topic "users" (version 1): /id must be integer',
      code: "schema_violation",
    });
    const notJson = await req("POST", "/v1/topics/users/produce", "plain text", "text/plain");
    expect(notJson.json()).toMatchObject({ code: "schema_violation" });
    expect(notJson.json().error).toMatch(/not valid JSON/);
    // acks=0 answers on receipt, but only after the check.
    expect((await req("POST", "/v1/topics/users/produce?acks=0", '{"name":"no id"}')).status).toBe(400);
    expect(await metric('narad_produce_rejected_total{reason="schema_violation"}')).toBe(
      'narad_produce_rejected_total{reason="schema_violation"} 3',
    );
    expect(await payloads("users", 1)).toEqual([{ id: 42, name: "valid" }]);
  });

  it("refuses a whole batch with one bad record (nothing stored) and takes a good one", async () => {
    const nd = ['{"payload":{"id":1}}', '{"payload":{"id":"two"}}', '{"payload":{"id":3}}'].join("\n");
    const refused = await req("POST", "/v1/topics/users/produce-batch", nd, "application/x-ndjson");
    expect(refused.status).toBe(400);
    expect(refused.json().code).toBe("schema_violation");
    expect(refused.json().error).toMatch(/^batch record 2 of 3 does not match .*\/id must be integer$/);
    const bin = encodeBinaryBatch([
      { partition: 0, key: Buffer.from("a"), payload: Buffer.from('{"id":4}') },
      { partition: 0, key: Buffer.from("b"), payload: Buffer.from("not json") },
    ]);
    const binRefused = await req(
      "POST",
      "/v1/topics/users/produce-batch",
      bin,
      "application/vnd.narad.batch",
    );
    expect(binRefused.json()).toMatchObject({ code: "schema_violation" });
    expect(binRefused.json().error).toMatch(/^batch record 2 of 2 /);

    const good = ['{"payload":{"id":5}}', '{"payload":{"id":6,"name":"six"}}'].join("\n");
    // acks=all: answered once committed, so whatever came before is in the log too.
    const ok = await req("POST", "/v1/topics/users/produce-batch?acks=all", good, "application/x-ndjson");
    expect(ok.status).toBe(200);
    expect(await payloads("users", 3)).toEqual([
      { id: 42, name: "valid" },
      { id: 5 },
      { id: 6, name: "six" },
    ]);
    // Exactly the three accepted records: the refused batches left no offset behind.
    expect((await req("GET", "/v1/topics/users")).json().partition_stats[0].high_watermark).toBe(3);
    expect(await metric('narad_messages_produced_total{topic="users",partition="0"}')).toMatch(/ 3$/);
  });

  it("takes an additive PATCH as version 2 and refuses an incompatible one (400 schema_incompatible)", async () => {
    const additive = await req("PATCH", "/v1/topics/users", { schema: schemaV2Additive });
    expect(additive.status).toBe(200);
    expect(additive.json()).toMatchObject({ schema: schemaV2Additive, schema_version: 2 });
    const incompatible = await req("PATCH", "/v1/topics/users", { schema: schemaV2TypeChange });
    expect(incompatible.status).toBe(400);
    expect(incompatible.json()).toEqual({
      error: expect.stringMatching(
        /not compatible with version 2: property "id": type changed from integer to string/,
      ),
      code: "schema_incompatible",
    });
    expect((await req("PATCH", "/v1/topics/users", { schema: "not a valid json schema" })).status).toBe(400);
    expect((await req("PATCH", "/v1/topics/users", { schema: null })).status).toBe(400);
    expect((await req("GET", "/v1/topics/users")).json().schema_version).toBe(2);
    // The new version is what produce checks now: email must be a string.
    expect((await req("POST", "/v1/topics/users/produce", '{"id":7,"email":7}')).json().error).toMatch(
      /\(version 2\): \/email must be string/,
    );
  });

  it("gives a schema to a topic that had none with PATCH, and leaves schema-less topics open", async () => {
    expect((await req("POST", "/v1/topics", { name: "open", partitions: 1 })).json()).not.toHaveProperty(
      "schema",
    );
    expect((await req("POST", "/v1/topics/open/produce", "{not json", "text/plain")).status).toBe(202);
    const first = await req("PATCH", "/v1/topics/open", { schema: schemaV1, retention_ms: 4_200_000 });
    expect(first.json()).toMatchObject({ schema_version: 1, retention_ms: 4_200_000 });
    expect((await req("POST", "/v1/topics/open/produce", "{not json", "text/plain")).status).toBe(400);
  });

  it("numbers concurrent PATCHes one after another (no two claim the same version)", async () => {
    await req("POST", "/v1/topics", { name: "racy", partitions: 1, schema: schemaV1 });
    const answers = await Promise.all(
      [1, 2, 3].map(() => req("PATCH", "/v1/topics/racy", { schema: schemaV2Additive })),
    );
    expect(answers.map((a) => a.json().schema_version).sort()).toEqual([2, 3, 4]);
    expect((await req("GET", "/v1/topics/racy")).json().schema_version).toBe(4);
  });

  it("keeps the schema and its version across a restart", async () => {
    await broker.shutdown();
    await start();
    expect((await req("GET", "/v1/topics/users")).json()).toMatchObject({
      schema: schemaV2Additive,
      schema_version: 2,
    });
    expect((await req("POST", "/v1/topics/users/produce", '{"id":"x"}')).json().code).toBe(
      "schema_violation",
    );
    expect((await req("POST", "/v1/topics/users/produce", '{"id":8,"email":"a@b"}')).status).toBe(202);
    // Evolution goes on from version 2.
    expect((await req("PATCH", "/v1/topics/users", { schema: schemaV2TypeChange })).status).toBe(400);
  });
});
