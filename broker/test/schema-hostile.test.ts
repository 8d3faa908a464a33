// Hostile topic schemas against a real broker process: a pattern with
// catastrophic backtracking must not hold the event loop (/healthz keeps
// answering while the produce is validated), and schemas or payloads deep
// enough to overflow a recursive walk are refused with a 400, not a 500.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNarad, startNarad } from "./harness/process.ts";

let narad: RunningNarad;

beforeAll(async () => {
  narad = await startNarad();
});

afterAll(async () => {
  await narad?.stop();
});

async function call(method: string, path: string, body?: string, timeoutMs = 10_000) {
  const started = performance.now();
  const res = await fetch(`${narad.url}${path}`, {
    method,
    body,
    headers: { "content-type": "application/json" },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - started };
}

function createTopic(name: string, schema: unknown) {
  return call("POST", "/v1/topics", JSON.stringify({ name, partitions: 1, schema }));
}

describe("hostile schemas", () => {
  it("validates a backtracking pattern in linear time while /healthz keeps answering", async () => {
    expect((await createTopic("redos", { type: "string", pattern: "^(a+)+$" })).status).toBe(201);
    // With V8's backtracking engine 32 a's held the loop ~50 s; 40 would take hours.
    const evil = JSON.stringify(`${"a".repeat(40)}!`);
    const produce = call("POST", "/v1/topics/redos/produce", evil);
    await new Promise((ok) => setTimeout(ok, 50));
    const health = await call("GET", "/healthz", undefined, 5_000);
    expect(health.status).toBe(200);
    expect(health.ms).toBeLessThan(2_000);
    const refused = await produce;
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).code).toBe("schema_violation");
    expect(refused.ms).toBeLessThan(2_000);
    expect((await call("POST", "/v1/topics/redos/produce", JSON.stringify("aaaa"))).status).toBe(202);
  }, 30_000);

  it("applies patternProperties with the same engine", async () => {
    const schema = { type: "object", patternProperties: { "^(a|aa)+$": { type: "integer" } } };
    expect((await createTopic("pp", schema)).status).toBe(201);
    const bad = await call("POST", "/v1/topics/pp/produce", JSON.stringify({ aaaa: "x" }));
    expect(bad.status).toBe(400);
    expect((await call("POST", "/v1/topics/pp/produce", JSON.stringify({ aaaa: 1 }))).status).toBe(202);
  });

  it("refuses a pattern RE2 cannot run (lookahead) when it is set, and keeps \\u escapes working", async () => {
    const look = await createTopic("look", { type: "string", pattern: "(?=a)b" });
    expect(look.status).toBe(400);
    expect(JSON.parse(look.text).code).toBe("schema_invalid");
    expect((await call("GET", "/v1/topics/look")).status).toBe(404);
    expect((await createTopic("uesc", { type: "string", pattern: "^\\u00e9$" })).status).toBe(201);
    expect((await call("POST", "/v1/topics/uesc/produce", JSON.stringify("é"))).status).toBe(202);
    expect((await call("POST", "/v1/topics/uesc/produce", JSON.stringify("e"))).status).toBe(400);
  });

  it("refuses a schema nested 1,000 levels deep with 400 schema_invalid (it was a 500)", async () => {
    let schema = '{"type":"object"}';
    for (let i = 0; i < 1000; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    const r = await call("POST", "/v1/topics", `{"name":"deep","partitions":1,"schema":${schema}}`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ code: "schema_invalid" });
    expect(JSON.parse(r.text).error).toMatch(/deeper than 64 levels/);
  });

  it("refuses a schema larger than 128 KiB with 400 schema_invalid", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) properties[`p${i}`] = { type: "string", maxLength: i };
    const r = await createTopic("wide", { type: "object", properties });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toMatch(/larger than 131072 bytes/);
  });

  it("takes a wide schema under the size limit (1,000 properties, 41 KB)", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) properties[`p${i}`] = { type: "string", maxLength: i };
    const r = await createTopic("wide-ok", { type: "object", properties });
    expect(r.status, r.text).toBe(201);
    expect((await call("POST", "/v1/topics/wide-ok/produce", JSON.stringify({ p3: "abcd" }))).status).toBe(
      400,
    );
    expect((await call("POST", "/v1/topics/wide-ok/produce", JSON.stringify({ p3: "abc" }))).status).toBe(
      202,
    );
  }, 30_000);

  it("refuses a payload too deep for a recursive schema with 400 schema_violation (it was a 500)", async () => {
    expect((await createTopic("rec", { items: { $ref: "#" } })).status).toBe(201);
    const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
    const r = await call("POST", "/v1/topics/rec/produce", deep);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ code: "schema_violation" });
    expect(JSON.parse(r.text).error).toMatch(/nests too deeply/);
    expect((await call("POST", "/v1/topics/rec/produce", "[[[]]]")).status).toBe(202);
  });
});
