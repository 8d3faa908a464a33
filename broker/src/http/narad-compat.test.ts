// Wire compatibility with Narad (Go) v1: the same request gets the same
// answer, for the rows where Narad's behaviour is a contract its clients
// depend on (docs/http-api.md, "Differences from Narad"). Through inject on
// a real node in a temp dir.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../config.ts";
import { type RunningBroker, startBroker } from "../node.ts";
import { parseDurationMs } from "./params.ts";

let dir: string;
let broker: RunningBroker;
let config: Config;

async function req(method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: string, type?: string) {
  const res = await broker.app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body }),
    headers: type === undefined ? {} : { "content-type": type },
  });
  return { status: res.statusCode, headers: res.headers, text: res.body, json: () => JSON.parse(res.body) };
}

const json = (v: unknown) => JSON.stringify(v);

async function visible(topic: string, count: number) {
  for (let i = 0; i < 500; i++) {
    const r = await req("GET", `/v1/topics/${topic}?partition=0`);
    if (r.json().partition_stats[0].high_watermark >= count) return;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  throw new Error("records not visible");
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-compat-"));
  config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
});

afterEach(async () => {
  await broker.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("Narad v1 wire compatibility", () => {
  it("sends created_at as Unix seconds and role, in every topic answer", async () => {
    const created = await req("POST", "/v1/topics", json({ name: "t", partitions: 1 }), "application/json");
    expect(created.status).toBe(201);
    const c = created.json();
    expect(Number.isInteger(c.created_at)).toBe(true);
    expect(Math.abs(c.created_at - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(2);
    expect(c.role).toBe("standalone");
    const listed = (await req("GET", "/v1/topics")).json().topics[0];
    const got = (await req("GET", "/v1/topics/t")).json();
    const patched = (await req("PATCH", "/v1/topics/t", json({ retention_ms: 7200000 }))).json();
    for (const t of [listed, got, patched]) {
      expect(t.created_at).toBe(c.created_at);
      expect(t.role).toBe("standalone");
    }
  });

  it("reads topic bodies as JSON whatever the content type says", async () => {
    expect((await req("POST", "/v1/topics", json({ name: "none", partitions: 1 }))).status).toBe(201);
    const form = await req(
      "POST",
      "/v1/topics",
      json({ name: "form", partitions: 1 }),
      "application/x-www-form-urlencoded",
    );
    expect(form.status, form.text).toBe(201);
    const octet = await req(
      "POST",
      "/v1/topics",
      json({ name: "oct", partitions: 1 }),
      "application/octet-stream",
    );
    expect(octet.status).toBe(201);
    const patch = await req(
      "PATCH",
      "/v1/topics/oct",
      json({ partitions: 2 }),
      "application/x-www-form-urlencoded",
    );
    expect(patch.status, patch.text).toBe(200);
    const bad = await req("POST", "/v1/topics", "{not json", "application/x-www-form-urlencoded");
    expect(bad.status).toBe(400);
    expect(bad.json().error).toMatch(/JSON/);
  });

  it("applies the default for a zero visibility timeout or cap on create", async () => {
    const r = await req(
      "POST",
      "/v1/topics",
      json({ name: "z", partitions: 1, visibility_timeout_ms: 0, max_in_flight_per_partition: 0 }),
    );
    expect(r.status, r.text).toBe(201);
    expect(r.json().visibility_timeout_ms).toBe(config.topicDefaults.visibilityTimeoutMs);
    expect(r.json().max_in_flight_per_partition).toBe(config.topicDefaults.maxInFlight);
  });

  it("pages with the raw last name as the token", async () => {
    for (const name of ["a", "b", "c"]) await req("POST", "/v1/topics", json({ name, partitions: 1 }));
    const first = (await req("GET", "/v1/topics?limit=2")).json();
    expect(first.topics.map((t: { name: string }) => t.name)).toEqual(["a", "b"]);
    expect(first.next_page_token).toBe("b");
    const second = (await req("GET", "/v1/topics?limit=2&page_token=b")).json();
    expect(second.topics.map((t: { name: string }) => t.name)).toEqual(["c"]);
    expect(second.next_page_token).toBe("");
    expect((await req("GET", "/v1/topics?page_token=a%2Fb")).status).toBe(400);
  });

  it("refuses an empty patch and a patch that does not grow the partition count", async () => {
    await req("POST", "/v1/topics", json({ name: "p", partitions: 2 }));
    expect((await req("PATCH", "/v1/topics/p", "{}")).status).toBe(400);
    expect((await req("PATCH", "/v1/topics/p", json({ partitions: 2 }))).status).toBe(400);
    expect((await req("PATCH", "/v1/topics/p", json({ partitions: 3 }))).status).toBe(200);
  });

  it("refuses an empty message with 400 message required", async () => {
    await req("POST", "/v1/topics", json({ name: "e", partitions: 1 }));
    const r = await req("POST", "/v1/topics/e/produce", "");
    expect(r.status).toBe(400);
    expect(r.json().error).toBe("message required");
  });

  it("accepts Go durations for wait", async () => {
    await req("POST", "/v1/topics", json({ name: "w", partitions: 1 }));
    for (const wait of ["0", "-1s", ".3s", "300000us", "1m0.001s"]) {
      const r = await req("GET", `/v1/topics/w/consume?wait=${wait}&partition=0`);
      expect(r.status, `wait=${wait}: ${r.text}`).toBe(204);
    }
    expect(parseDurationMs(".3s", "wait")).toBe(300);
    expect(parseDurationMs("300000us", "wait")).toBe(300);
    expect(parseDurationMs("1h2m3s4ms", "wait")).toBe(3_723_004);
    expect(parseDurationMs("-1s", "wait")).toBe(-1000);
    expect(parseDurationMs("1.5ns", "wait")).toBe(1);
    for (const bad of ["1", "s", ".s", "1x", "1s2", "--1s"])
      expect(() => parseDurationMs(bad, "wait")).toThrow();
  });

  it("settles as Narad does: extend=false and extend= ack, 0 nacks, true extends, others 400", async () => {
    await req("POST", "/v1/topics", json({ name: "q", partitions: 1 }));
    for (let i = 0; i < 2; i++) await req("POST", "/v1/topics/q/produce?partition=0", json({ i }));
    await visible("q", 2);
    const lease = async () => (await req("GET", "/v1/topics/q/consume?partition=0")).json();
    const settle = (h: string, extend: string) =>
      req("POST", `/v1/topics/q/ack?receipt_handle=${encodeURIComponent(h)}${extend}`);
    const m0 = await lease();
    expect((await settle(m0.receipt_handle, "&extend=false")).status).toBe(204);
    expect((await settle(m0.receipt_handle, "")).status).toBe(410); // it was acked, not nacked
    const m1 = await lease();
    expect(m1.offset).toBe(1);
    // Any other value is 400 and settles nothing.
    const typo = await settle(m1.receipt_handle, "&extend=later");
    expect(typo.status).toBe(400);
    expect(typo.json().error).toMatch(/invalid extend/);
    expect((await settle(m1.receipt_handle, "&extend=")).status).toBe(204);
    expect((await settle(m1.receipt_handle, "&extend=true")).status).toBe(410);
  });

  it("answers 410 to every settle of a lease past its visibility timeout", async () => {
    await req("POST", "/v1/topics", json({ name: "x", partitions: 1, visibility_timeout_ms: 5 }));
    await req("POST", "/v1/topics/x/produce?partition=0", "m");
    await visible("x", 1);
    const m = (await req("GET", "/v1/topics/x/consume?partition=0")).json();
    // Past the timeout; the 1 s purge timer has most likely not run yet, so
    // only the settle's own expiry check stands between this ack and a 204.
    await new Promise((ok) => setTimeout(ok, 30));
    for (const extend of ["", "&extend=true", "&extend=0"]) {
      const r = await req(
        "POST",
        `/v1/topics/x/ack?receipt_handle=${encodeURIComponent(m.receipt_handle)}${extend}`,
      );
      expect(r.status, `extend${extend}`).toBe(410);
    }
    const again = (await req("GET", "/v1/topics/x/consume?partition=0")).json();
    expect(again.offset).toBe(0); // redelivered
  });

  it("answers 405 with Allow for a known path and a wrong method", async () => {
    await req("POST", "/v1/topics", json({ name: "m", partitions: 1 }));
    const r = await req("GET", "/v1/topics/m/produce");
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe("POST");
    expect(r.json().error).toMatch(/not allowed/);
    expect((await req("DELETE", "/v1/topics")).headers.allow).toBe("GET, HEAD, POST");
    expect((await req("GET", "/v1/nothing/here")).status).toBe(404);
  });

  it("labels metrics as Narad does", async () => {
    await req("POST", "/v1/topics", json({ name: "l", partitions: 2 }));
    await req("POST", "/v1/topics/l/produce?partition=1", "x");
    await req("GET", "/v1/topics/l");
    const text = (await req("GET", "/metrics")).text;
    expect(text).toContain('narad_messages_produced_total{topic="l",partition="1"} 1');
    expect(text).toMatch(
      /narad_http_requests_total\{route="GET \/v1\/topics\/\{topic\}",method="GET",status="200"\} 1/,
    );
  });
});
