// The /v1 API against a real node (WAL, partition logs, dispatcher, file
// metastore in a temp dir), driven through fastify's inject: status codes,
// JSON error bodies and message JSON as Narad v1 clients expect them.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { encodeBinaryBatch } from "../core/batch-codec.ts";
import { type RunningBroker, startBroker } from "../node.ts";

let dir: string;
let broker: RunningBroker;

async function req(
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  body?: unknown,
  headers?: Record<string, string>,
) {
  const payload =
    body === undefined
      ? undefined
      : typeof body === "string" || Buffer.isBuffer(body)
        ? body
        : JSON.stringify(body);
  const h = {
    ...(body !== undefined && !Buffer.isBuffer(body) && typeof body !== "string"
      ? { "content-type": "application/json" }
      : {}),
    ...headers,
  };
  const res = await broker.app.inject({ method, url, payload, headers: h });
  return { status: res.statusCode, headers: res.headers, text: res.body, json: () => JSON.parse(res.body) };
}

async function visible(topic: string, partition: number, count: number) {
  for (let i = 0; i < 200; i++) {
    const r = await req("GET", `/v1/topics/${topic}/records?partition=${partition}`);
    if (r.json().records.length >= count) return r.json().records;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  throw new Error(`records not visible in ${topic}/${partition}`);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-api-"));
  const config = loadConfig(
    ["--data-dir", dir, "--addr", "127.0.0.1:0", "--max-body-bytes", "4096"],
    {},
    "node-a",
  );
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
});

afterEach(async () => {
  await broker.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("topics", () => {
  it("creates, lists with keyset pagination, describes, patches and deletes", async () => {
    for (const name of ["b", "a", "c.d", "E_1"])
      expect((await req("POST", "/v1/topics", { name, partitions: 2 })).status).toBe(201);
    expect((await req("POST", "/v1/topics", { name: "a" })).status).toBe(409);
    const page1 = (await req("GET", "/v1/topics?limit=3")).json();
    expect(page1.topics.map((t: { name: string }) => t.name)).toEqual(["E_1", "a", "b"]);
    const page2 = (await req("GET", `/v1/topics?limit=3&page_token=${page1.next_page_token}`)).json();
    expect(page2.topics.map((t: { name: string }) => t.name)).toEqual(["c.d"]);
    expect(page2.next_page_token).toBe("");
    const info = (await req("GET", "/v1/topics/a")).json();
    expect(info.partition_stats).toHaveLength(2);
    expect(info.partition_stats[0]).toMatchObject({ index: 0, high_watermark: 0, owner_node: "node-a" });
    expect((await req("PATCH", "/v1/topics/a", { partitions: 4 })).json().partitions).toBe(4);
    expect((await req("PATCH", "/v1/topics/a", { partitions: 1 })).status).toBe(400);
    expect((await req("DELETE", "/v1/topics/a")).status).toBe(204);
    expect((await req("GET", "/v1/topics/a")).status).toBe(404);
  });

  it.each([
    [{ name: "bad/name" }, 400],
    [{ name: "ok", partitions: 0 }, 400],
    [{ name: "ok", nope: true }, 400],
    ["not json", 400],
  ])("rejects %j with a JSON error", async (body, status) => {
    const r = await req("POST", "/v1/topics", body, { "content-type": "application/json" });
    expect(r.status).toBe(status);
    expect(typeof r.json().error).toBe("string");
  });

  it("validates list parameters", async () => {
    expect((await req("GET", "/v1/topics?limit=0")).status).toBe(400);
    expect((await req("GET", "/v1/topics?limit=abc")).status).toBe(400);
  });
});

describe("produce and read", () => {
  beforeEach(async () => {
    await req("POST", "/v1/topics", { name: "t", partitions: 3 });
  });

  it("202s a message that then becomes visible with Narad v1 JSON", async () => {
    const r = await req("POST", "/v1/topics/t/produce?key=user-1&partition=1", '{"hello":"world"}');
    expect(r.status).toBe(202);
    expect(r.text).toBe("");
    const [m] = await visible("t", 1, 1);
    expect(m).toMatchObject({
      topic: "t",
      partition: 1,
      offset: 0,
      key: "user-1",
      payload: { hello: "world" },
    });
    const one = await req("GET", "/v1/topics/t/consume?partition=1&offset=0");
    expect(one.status).toBe(200);
    expect(one.json().payload).toEqual({ hello: "world" });
    expect((await req("GET", "/v1/topics/t/consume?partition=1&offset=1")).status).toBe(204);
  });

  it("hashes keys to a stable partition and rotates keyless messages", async () => {
    for (let i = 0; i < 6; i++)
      expect((await req("POST", "/v1/topics/t/produce?key=same", `m${i}`)).status).toBe(202);
    for (let i = 0; i < 3; i++) expect((await req("POST", "/v1/topics/t/produce", `k${i}`)).status).toBe(202);
    let hwms: number[] = [];
    for (let i = 0; i < 200 && hwms.reduce((a, b) => a + b, 0) < 9; i++) {
      await new Promise((ok) => setTimeout(ok, 10));
      hwms = (await req("GET", "/v1/topics/t"))
        .json()
        .partition_stats.map((p: { high_watermark: number }) => p.high_watermark);
    }
    // The six keyed messages share one partition; the three keyless ones go one to each.
    expect(hwms.reduce((a, b) => a + b, 0)).toBe(9);
    expect([...hwms].sort()).toEqual([1, 1, 7]);
  });

  it("accepts binary and NDJSON batches", async () => {
    const bin = encodeBinaryBatch(
      Array.from({ length: 50 }, (_, i) => ({
        partition: 2,
        key: Buffer.from(`k${i}`),
        payload: Buffer.from(`v${i}`),
      })),
    );
    const r1 = await req("POST", "/v1/topics/t/produce-batch", bin, {
      "content-type": "application/vnd.narad.batch",
    });
    expect(r1.status).toBe(202);
    expect(r1.json()).toEqual({ accepted: 50 });
    const nd = '{"payload":{"a":1},"partition":0}\n{"payload":"text","partition":0}\n';
    expect(
      (await req("POST", "/v1/topics/t/produce-batch", nd, { "content-type": "application/x-ndjson" }))
        .status,
    ).toBe(202);
    const two = await visible("t", 2, 50);
    expect(two.map((m: { payload: string }) => m.payload)).toEqual(
      Array.from({ length: 50 }, (_, i) => `v${i}`),
    );
    const zero = await visible("t", 0, 2);
    expect(zero.map((m: { payload: unknown }) => m.payload)).toEqual([{ a: 1 }, "text"]);
  });

  it.each([
    ["POST", "/v1/topics/missing/produce", "x", 404],
    ["POST", "/v1/topics/t/produce?partition=3", "x", 400],
    ["POST", "/v1/topics/t/produce?partition=-1", "x", 400],
    ["POST", "/v1/topics/t/produce", "x".repeat(5000), 413],
    ["GET", "/v1/topics/t/consume?offset=0", undefined, 400],
    ["GET", "/v1/topics/t/consume?partition=9&offset=0", undefined, 400],
    ["GET", "/v1/topics/t/consume?partition=0&offset=abc", undefined, 400],
    ["GET", "/v1/topics/t/records?partition=0&limit=0", undefined, 400],
    ["GET", "/v1/nothing", undefined, 404],
  ] as const)("%s %s → %s with a JSON error", async (method, url, body, status) => {
    const r = await req(method, url, body);
    expect(r.status).toBe(status);
    expect(typeof r.json().error).toBe("string");
  });

  it("refuses unknown batch content types and malformed batches", async () => {
    expect(
      (await req("POST", "/v1/topics/t/produce-batch", "x", { "content-type": "text/plain" })).status,
    ).toBe(415);
    expect(
      (await req("POST", "/v1/topics/t/produce-batch", "{bad", { "content-type": "application/x-ndjson" }))
        .status,
    ).toBe(400);
    expect(
      (
        await req("POST", "/v1/topics/t/produce-batch", Buffer.from([0, 0, 0]), {
          "content-type": "application/vnd.narad.batch",
        })
      ).status,
    ).toBe(400);
    const info = (await req("GET", "/v1/topics/t")).json();
    expect(info.partition_stats.every((p: { next_offset: number }) => p.next_offset === 0)).toBe(true);
  });
});

describe("drain and admin", () => {
  it("refuses produce with 503 and Retry-After while draining, and resumes on cancel", async () => {
    await req("POST", "/v1/topics", { name: "t", partitions: 1 });
    expect((await req("POST", "/v1/topics/t/produce", "before")).status).toBe(202);
    const drained = (await req("POST", "/admin/v1/drain?wait_ms=5000")).json();
    expect(drained).toMatchObject({ draining: true, drained: true, ready: false });
    const refused = await req("POST", "/v1/topics/t/produce", "during");
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBe("1");
    expect((await req("GET", "/readyz")).status).toBe(503);
    await req("DELETE", "/admin/v1/drain");
    expect((await req("POST", "/v1/topics/t/produce", "after")).status).toBe(202);
    expect((await req("GET", "/readyz")).status).toBe(200);
  });

  it("removes a deleted topic's data only once the metastore forgot it", async () => {
    await req("POST", "/v1/topics", { name: "gone", partitions: 1 });
    expect((await req("DELETE", "/admin/v1/topics/gone/data")).status).toBe(409);
    await req("DELETE", "/v1/topics/gone");
    expect((await req("DELETE", "/admin/v1/topics/gone/data")).status).toBe(204);
    expect((await req("DELETE", "/admin/v1/topics/..%2Fetc/data")).status).toBe(400);
  });

  it("exposes Prometheus metrics", async () => {
    await req("POST", "/v1/topics", { name: "t", partitions: 1 });
    await req("POST", "/v1/topics/t/produce", "x");
    const text = (await req("GET", "/metrics")).text;
    expect(text).toContain('narad_messages_produced_total{topic="t",partition="0"} 1');
    expect(text).toMatch(/narad_wal_fsync_seconds_count \d+/);
    expect(text).toContain("narad_wal_pending_records");
  });

  it("counts requests per route template and status, unmatched URLs apart", async () => {
    await req("POST", "/v1/topics", { name: "t", partitions: 1 });
    for (let i = 0; i < 3; i++) await req("POST", "/v1/topics/t/produce", "x");
    await req("POST", "/v1/topics/nope/produce", "x");
    await req("GET", "/no/such/path");
    const text = (await req("GET", "/metrics")).text;
    expect(text).toContain(
      'narad_http_requests_total{route="POST /v1/topics/{topic}/produce",method="POST",status="202"} 3',
    );
    expect(text).toContain(
      'narad_http_requests_total{route="POST /v1/topics/{topic}/produce",method="POST",status="404"} 1',
    );
    expect(text).toContain('narad_http_requests_total{route="unmatched",method="GET",status="404"} 1');
    expect(text).toContain(
      'narad_http_request_duration_seconds_count{route="POST /v1/topics/{topic}/produce",method="POST"} 4',
    );
  });
});

describe("idempotent produce", () => {
  beforeEach(async () => {
    await req("POST", "/v1/topics", { name: "t", partitions: 3 });
  });

  const ph = (id: string, epoch: string | number, seq: string | number) => ({
    "narad-producer-id": id,
    "narad-producer-epoch": String(epoch),
    "narad-producer-seq": String(seq),
  });

  it.each([
    [{ "narad-producer-id": "p1" }, /must be sent together/],
    [ph("bad id!", 1, 0), /narad-producer-id/],
    [ph("x".repeat(65), 1, 0), /narad-producer-id/],
    [ph("p1", -1, 0), /narad-producer-epoch/],
    [ph("p1", 2 ** 32, 0), /narad-producer-epoch/],
    [ph("p1", 1, "1.5"), /narad-producer-seq/],
    [ph("p1", 1, 2 ** 53), /narad-producer-seq/],
  ])("400s malformed producer headers %#", async (headers, message) => {
    const r = await req("POST", "/v1/topics/t/produce?partition=0", "x", headers as Record<string, string>);
    expect(r.status).toBe(400);
    expect(r.json().error).toMatch(message);
  });

  const init = async (name?: string): Promise<{ producer_id: string; epoch: number }> => {
    const r = await req("POST", "/v1/producers", name === undefined ? {} : { name });
    expect(r.status).toBe(201);
    return r.json();
  };

  it("400s an idempotent record without key or partition (a retry could land elsewhere)", async () => {
    const p = await init();
    const r = await req("POST", "/v1/topics/t/produce?acks=all", "x", ph(p.producer_id, 0, 0));
    expect(r.status).toBe(400);
    expect(r.json().error).toMatch(/key or an explicit partition/);
  });

  it("400s idempotent produce without acks=all, an unknown id, an epoch never issued; and a bad acks", async () => {
    const p = await init();
    for (const acks of ["", "&acks=wal", "&acks=0"]) {
      const r = await req("POST", `/v1/topics/t/produce?partition=0${acks}`, "x", ph(p.producer_id, 0, 0));
      expect(r.status).toBe(400);
      expect(r.json().code).toBe("acks_all_required");
    }
    const unknown = await req("POST", "/v1/topics/t/produce?partition=0&acks=all", "x", ph("p-999999", 0, 0));
    expect(unknown.json()).toMatchObject({ code: "unknown_producer_id" });
    const future = await req(
      "POST",
      "/v1/topics/t/produce?partition=0&acks=all",
      "x",
      ph(p.producer_id, 3, 0),
    );
    expect(future.json()).toMatchObject({ code: "invalid_producer_epoch" });
    const bad = await req("POST", "/v1/topics/t/produce?partition=0&acks=2", "x");
    expect(bad.status).toBe(400);
    expect(bad.json().code).toBe("invalid_acks");
  });

  it("acks modes: none keeps the v1 202, acks=all answers offsets", async () => {
    const plain = await req("POST", "/v1/topics/t/produce?partition=2", "a");
    expect(plain.status).toBe(202);
    expect(plain.text).toBe("");
    expect((await req("POST", "/v1/topics/t/produce?partition=2&acks=wal", "b")).status).toBe(202);
    expect((await req("POST", "/v1/topics/t/produce?partition=2&acks=0", "c")).status).toBe(202);
    const all = await req("POST", "/v1/topics/t/produce?partition=2&acks=all", "d");
    expect(all.status).toBe(200);
    expect(all.json()).toEqual({ partition: 2, offset: 3 });
  });

  it("stores a retried single produce and a retried batch once, answering the original offsets", async () => {
    const p = await init();
    const id = p.producer_id;
    for (let i = 0; i < 3; i++) {
      const r = await req("POST", "/v1/topics/t/produce?partition=1&acks=all", "one", ph(id, 0, 0));
      expect(r.status).toBe(200);
      expect(r.json()).toEqual({ partition: 1, offset: 0 });
    }
    const bin = encodeBinaryBatch(
      Array.from({ length: 4 }, (_, i) => ({
        partition: 1,
        key: Buffer.alloc(0),
        payload: Buffer.from(`b${i}`),
      })),
    );
    for (let i = 0; i < 2; i++) {
      const r = await req("POST", "/v1/topics/t/produce-batch?acks=all", bin, {
        "content-type": "application/vnd.narad.batch",
        ...ph(id, 0, 1),
      });
      expect(r.status).toBe(200);
      expect(r.json().results.map((x: { offset: number }) => x.offset)).toEqual([1, 2, 3, 4]);
    }
    // A gap: seqs 7.. when 5 is next.
    const gap = await req("POST", "/v1/topics/t/produce-batch?acks=all", bin, {
      "content-type": "application/vnd.narad.batch",
      ...ph(id, 0, 7),
    });
    expect(gap.status).toBe(409);
    expect(gap.json().code).toBe("out_of_order_sequence");
    const all = (await req("GET", "/v1/topics/t/records?partition=1")).json().records;
    expect(all.map((m: { payload: string }) => m.payload)).toEqual(["one", "b0", "b1", "b2", "b3"]);
  });

  it("409s a fenced epoch at ingress with a clear error", async () => {
    const first = await init("app");
    expect(first.epoch).toBe(0);
    const ok = await req(
      "POST",
      "/v1/topics/t/produce?partition=0&acks=all",
      "old",
      ph(first.producer_id, 0, 0),
    );
    expect(ok.status).toBe(200);
    const second = await init("app");
    expect(second).toEqual({ producer_id: first.producer_id, epoch: 1 });
    const r = await req(
      "POST",
      "/v1/topics/t/produce?partition=0&acks=all",
      "zombie",
      ph(first.producer_id, 0, 1),
    );
    expect(r.status).toBe(409);
    expect(r.json()).toMatchObject({ code: "producer_fenced" });
    expect(r.json().error).toMatch(/^producer fenced: epoch 0 < 1/);
    const again = await req(
      "POST",
      "/v1/topics/t/produce?partition=0&acks=all",
      "new",
      ph(first.producer_id, 1, 0),
    );
    expect(again.status).toBe(200);
    const text = (await req("GET", "/metrics")).text;
    expect(text).toContain('narad_produce_rejected_total{reason="producer_fenced"} 1');
  });

  it("POST /v1/producers validates its body", async () => {
    expect((await req("POST", "/v1/producers", { name: "bad name!" })).status).toBe(400);
    expect((await req("POST", "/v1/producers", { other: 1 })).status).toBe(400);
    const a = await init();
    const b = await init();
    expect(a.producer_id).not.toBe(b.producer_id);
    for (const bad of [
      { epoch: 0 },
      { name: "x", epoch: -1 },
      { name: "x", epoch: "1" },
      { name: "x", epoch: 1.5 },
    ]) {
      const r = await req("POST", "/v1/producers", bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.json().code).toBe("bad_request");
    }
  });

  it("POST /v1/producers with the caller's epoch: bumped only while the name is still there, else producer_fenced", async () => {
    const first = await init("reinit");
    const second = await init("reinit");
    // The older instance re-initialising from its epoch must not fence the newer one.
    const zombie = await req("POST", "/v1/producers", { name: "reinit", epoch: first.epoch });
    expect(zombie.status).toBe(409);
    expect(zombie.json().code).toBe("producer_fenced");
    const own = await req("POST", "/v1/producers", { name: "reinit", epoch: second.epoch });
    expect(own.status).toBe(201);
    expect(own.json()).toEqual({ producer_id: second.producer_id, epoch: second.epoch + 1 });
  });
});

describe("hostile inputs (issue #14)", () => {
  it("a drain refused for a bad wait_ms does not start draining", async () => {
    const refused = await req("POST", "/admin/v1/drain?wait_ms=-1");
    expect(refused.status).toBe(400);
    // Before: the drain had started (readyz 503, produce 503).
    expect((await req("GET", "/readyz")).status).toBe(200);
    expect((await req("GET", "/admin/v1/status")).json().draining).toBe(false);
  });

  it("a 255-character topic deletes cleanly (204) and its records do not come back when re-created", async () => {
    const name = "t".repeat(255);
    expect((await req("POST", "/v1/topics", { name, partitions: 1 })).status).toBe(201);
    expect((await req("POST", `/v1/topics/${name}/produce`, "old")).status).toBe(202);
    await visible(name, 0, 1);
    // Before: 500 after the metadata was removed (the trash name passed 255 bytes), data kept.
    expect((await req("DELETE", `/v1/topics/${name}`)).status).toBe(204);
    expect((await req("POST", "/v1/topics", { name, partitions: 1 })).status).toBe(201);
    const again = (await req("GET", `/v1/topics/${name}/records?partition=0`)).json();
    expect(again.records).toEqual([]);
  });

  it("group names that cannot fit a file name are refused with 400 everywhere; 244 works end to end", async () => {
    expect((await req("POST", "/v1/topics", { name: "g", partitions: 1 })).status).toBe(201);
    const long = "g".repeat(245);
    for (const [method, url] of [
      ["GET", `/v1/topics/g/consume?group=${long}`],
      ["PUT", `/v1/topics/g/groups/${long}`],
    ] as const) {
      const r = await broker.app.inject({ method, url });
      expect(r.statusCode).toBe(400);
      expect(JSON.parse(r.body).error).toMatch(/1,244/);
    }
    const atTopicCreate = await req("POST", "/v1/topics", {
      name: "g2",
      subscriptions: [{ name: long }],
    });
    expect(atTopicCreate.status).toBe(400);
    const ok = "h".repeat(244);
    expect((await req("POST", "/v1/topics/g/produce", "m")).status).toBe(202);
    await visible("g", 0, 1);
    const got = await req("GET", `/v1/topics/g/consume?group=${ok}&wait=2s`);
    expect(got.status).toBe(200);
    const handle = got.json().receipt_handle as string;
    expect((await req("POST", `/v1/topics/g/ack?receipt_handle=${encodeURIComponent(handle)}`)).status).toBe(
      204,
    );
    expect((await req("GET", "/v1/topics/g/groups")).status).toBe(200);
  });
});

describe("receipt handles (issue #14)", () => {
  it("cannot be forged from a known one: the next lease's handle is not the next nonce", async () => {
    expect((await req("POST", "/v1/topics", { name: "rh", partitions: 1 })).status).toBe(201);
    for (const m of ["a", "b"]) expect((await req("POST", "/v1/topics/rh/produce", m)).status).toBe(202);
    await visible("rh", 0, 2);
    const first = (await req("GET", "/v1/topics/rh/consume?wait=2s")).json().receipt_handle as string;
    expect((await req("GET", "/v1/topics/rh/consume?wait=2s")).status).toBe(200);
    // <partition>:<offset>:<epoch>.<nonce>: guess the second lease from the first.
    const [p, o, tail] = first.split(":") as [string, string, string];
    const [epoch, nonce] = tail.split(".") as [string, string];
    const forged = `${p}:${Number(o) + 1}:${epoch}.${(Number.parseInt(nonce, 36) + 1).toString(36)}`;
    // Before: 204, the forger acked someone else's lease.
    expect((await req("POST", `/v1/topics/rh/ack?receipt_handle=${encodeURIComponent(forged)}`)).status).toBe(
      410,
    );
    expect((await req("POST", `/v1/topics/rh/ack?receipt_handle=${encodeURIComponent(first)}`)).status).toBe(
      204,
    );
  });
});
