// Queue consumption through inject on a real node (WAL, logs, dispatcher,
// file metastore in a temp dir): leases, receipt handles, ack/extend/nack,
// caps, long-polls, groups, durable frontier files.

import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../config.ts";
import { type RunningBroker, startBroker } from "../../node.ts";

let dir: string;
let broker: RunningBroker;

interface Msg {
  partition: number;
  offset: number;
  payload: unknown;
  receipt_handle?: string;
}

async function req(method: "GET" | "POST" | "DELETE", url: string, body?: unknown) {
  const res = await broker.app.inject({
    method,
    url,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.statusCode, headers: res.headers, text: res.body, json: () => JSON.parse(res.body) };
}

async function createTopic(name: string, extra: Record<string, number> = {}) {
  const r = await req("POST", "/v1/topics", { name, partitions: 1, ...extra });
  expect(r.status).toBe(201);
}

async function produce(topic: string, n: number, partition = 0) {
  for (let i = 0; i < n; i++) {
    const r = await broker.app.inject({
      method: "POST",
      url: `/v1/topics/${topic}/produce?partition=${partition}`,
      payload: JSON.stringify({ i }),
    });
    expect(r.statusCode).toBe(202);
  }
}

async function hwm(topic: string, partition = 0): Promise<number> {
  return (await req("GET", `/v1/topics/${topic}?partition=${partition}`)).json().partition_stats[0]
    .high_watermark;
}

async function visible(topic: string, count: number, partition = 0) {
  for (let i = 0; i < 500; i++) {
    if ((await hwm(topic, partition)) >= count) return;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  throw new Error(`records not visible in ${topic}/${partition}`);
}

async function consume(topic: string, qs = "partition=0"): Promise<Msg | undefined> {
  const r = await req("GET", `/v1/topics/${topic}/consume?${qs}`);
  if (r.status === 204) return undefined;
  expect(r.status, r.text).toBe(200);
  return r.json() as Msg;
}

async function ack(topic: string, handle: string, extend?: string) {
  const e = extend === undefined ? "" : `&extend=${extend}`;
  return req("POST", `/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(handle)}${e}`);
}

async function groups(topic: string) {
  return (await req("GET", `/v1/topics/${topic}/groups`)).json().groups as Array<{
    name: string;
    lag: number;
    partitions: Array<{ partition: number; committed: number; in_flight: number; lag: number }>;
  }>;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-consume-"));
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
});

afterEach(async () => {
  await broker.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("queue consume", () => {
  it("leases in order, acks advance the frontier over acked-ahead runs, and persist it", async () => {
    await createTopic("q");
    await produce("q", 3);
    await visible("q", 3);
    const m = [await consume("q"), await consume("q"), await consume("q")] as Msg[];
    expect(m.map((x) => x.offset)).toEqual([0, 1, 2]);
    expect(m[0]?.payload).toEqual({ i: 0 });
    expect(m[0]?.receipt_handle).toMatch(/^0:0:[0-9a-f]{12}\.[0-9a-z]+$/);
    expect(await consume("q")).toBeUndefined();
    expect((await ack("q", m[1]!.receipt_handle!)).status).toBe(204);
    expect((await groups("q"))[0]?.partitions[0]).toMatchObject({ committed: 0, in_flight: 2, lag: 3 });
    expect((await ack("q", m[0]!.receipt_handle!)).status).toBe(204);
    expect((await groups("q"))[0]?.partitions[0]).toMatchObject({ committed: 2, in_flight: 1, lag: 1 });
    expect((await ack("q", m[2]!.receipt_handle!)).status).toBe(204);
    expect((await groups("q"))[0]).toMatchObject({ name: "default", lag: 0 });
    // Acking twice: the lease is gone.
    expect((await ack("q", m[2]!.receipt_handle!)).status).toBe(410);
    // Batched persistence (~100 ms): 8 bytes big-endian.
    const file = join(dir, "topics", "q", "p00000", "consumers", "default.offset");
    for (let i = 0; i < 100 && !(existsSync(file) && readFileSync(file).readUInt32BE(4) === 3); i++)
      await sleep(20);
    expect(readFileSync(file)).toEqual(Buffer.from([0, 0, 0, 0, 0, 0, 0, 3]));
    const metrics = (await req("GET", "/metrics")).text;
    expect(metrics).toMatch(/narad_consumer_lag_messages\{topic="q",partition="0",group="default"\} 0/);
    expect(metrics).toMatch(/narad_consumer_inflight_messages\{topic="q",partition="0",group="default"\} 0/);
  });

  it("deleting a topic or a group removes its series from /metrics", async () => {
    await createTopic("gone");
    await produce("gone", 2);
    await visible("gone", 2);
    const m = (await consume("gone", "group=g1"))!;
    expect((await ack("gone", m.receipt_handle!)).status).toBe(204);
    const leased = (await consume("gone", "group=g2"))!;
    expect((await ack("gone", leased.receipt_handle!, "0")).status).toBe(204); // nack: redeliver now
    expect(await consume("gone", "group=g2")).toBeDefined(); // the redelivery
    let metrics = (await req("GET", "/metrics")).text;
    expect(metrics).toMatch(/narad_messages_produced_total\{topic="gone"/);
    expect(metrics).toMatch(/narad_consumer_redelivered_total\{topic="gone",group="g2"\}/);
    expect((await req("DELETE", "/v1/topics/gone/groups/g2")).status).toBe(204);
    metrics = (await req("GET", "/metrics")).text;
    expect(metrics).not.toMatch(/group="g2"/);
    expect(metrics).toMatch(/narad_messages_consumed_total\{topic="gone"/);
    expect((await req("DELETE", "/v1/topics/gone")).status).toBe(204);
    metrics = (await req("GET", "/metrics")).text;
    expect(metrics).not.toContain('topic="gone"');
  });

  it("redelivers after the visibility timeout; the old handle is stale", async () => {
    await createTopic("vis", { visibility_timeout_ms: 200 });
    await produce("vis", 1);
    await visible("vis", 1);
    const first = (await consume("vis")) as Msg;
    expect(await consume("vis")).toBeUndefined();
    await sleep(260);
    const again = (await consume("vis")) as Msg;
    expect(again.offset).toBe(0);
    expect(again.receipt_handle).not.toBe(first.receipt_handle);
    expect((await ack("vis", first.receipt_handle!)).status).toBe(410);
    expect((await ack("vis", again.receipt_handle!)).status).toBe(204);
    expect((await req("GET", "/metrics")).text).toMatch(
      /narad_consumer_redelivered_total\{topic="vis",group="default"\} 1/,
    );
  });

  it("extend keeps the lease past its first expiry; nack redelivers at once", async () => {
    await createTopic("ext", { visibility_timeout_ms: 300 });
    await produce("ext", 1);
    await visible("ext", 1);
    const m = (await consume("ext")) as Msg;
    await sleep(200);
    expect((await ack("ext", m.receipt_handle!, "true")).status).toBe(204);
    await sleep(200); // 400 ms after the lease: expired without the extend
    expect(await consume("ext")).toBeUndefined();
    expect((await ack("ext", m.receipt_handle!, "0")).status).toBe(204); // nack
    const again = (await consume("ext")) as Msg;
    expect(again.offset).toBe(0);
    expect((await ack("ext", m.receipt_handle!, "1")).status).toBe(410);
    expect((await ack("ext", again.receipt_handle!)).status).toBe(204);
  });

  it("answers 204 when max_in_flight leases are out", async () => {
    await createTopic("cap", { max_in_flight_per_partition: 2 });
    await produce("cap", 3);
    await visible("cap", 3);
    const a = (await consume("cap")) as Msg;
    expect(await consume("cap")).toBeDefined();
    expect(await consume("cap")).toBeUndefined();
    expect((await ack("cap", a.receipt_handle!)).status).toBe(204);
    expect((await consume("cap"))?.offset).toBe(2);
  });

  it("with the acked-ahead set full hands out only the frontier and refuses acks ahead with 503", async () => {
    await createTopic("ahead", { max_acked_ahead_per_partition: 1 });
    await produce("ahead", 4);
    await visible("ahead", 4);
    const m = [await consume("ahead"), await consume("ahead"), await consume("ahead")] as Msg[];
    expect((await ack("ahead", m[1]!.receipt_handle!)).status).toBe(204);
    const full = await ack("ahead", m[2]!.receipt_handle!);
    expect(full.status).toBe(503);
    expect(full.headers["retry-after"]).toBeDefined();
    expect(await consume("ahead")).toBeUndefined(); // offset 3 is not the frontier
    expect((await ack("ahead", m[0]!.receipt_handle!, "0")).status).toBe(204);
    const frontier = (await consume("ahead")) as Msg;
    expect(frontier.offset).toBe(0);
    expect((await ack("ahead", frontier.receipt_handle!)).status).toBe(204);
    expect((await ack("ahead", m[2]!.receipt_handle!)).status).toBe(204);
    expect((await groups("ahead"))[0]?.partitions[0]?.committed).toBe(3);
  });

  it("a long-poll wakes when a produce commits", async () => {
    await createTopic("lp");
    const started = Date.now();
    const polling = req("GET", "/v1/topics/lp/consume?wait=5s");
    await sleep(150);
    const produced = Date.now();
    await produce("lp", 1);
    const r = await polling;
    const latency = Date.now() - produced;
    expect(r.status).toBe(200);
    expect(r.json().offset).toBe(0);
    expect(Date.now() - started).toBeLessThan(2_000);
    // Produce → WAL fsync → dispatch → log fsync → wake: well under the wait.
    expect(latency).toBeLessThan(500);
    console.log(`long-poll woke ${latency} ms after the produce call`);
  });

  it("a long-poll times out with 204 after wait, and wakes on a nack", async () => {
    await createTopic("lp2", { max_in_flight_per_partition: 1 });
    const t0 = Date.now();
    expect((await req("GET", "/v1/topics/lp2/consume?wait=150ms")).status).toBe(204);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    await produce("lp2", 1);
    await visible("lp2", 1);
    const m = (await consume("lp2", "")) as Msg;
    const polling = req("GET", "/v1/topics/lp2/consume?wait=5s");
    await sleep(100);
    const nacked = Date.now();
    expect((await ack("lp2", m.receipt_handle!, "0")).status).toBe(204);
    const r = await polling;
    expect(r.status).toBe(200);
    expect(Date.now() - nacked).toBeLessThan(100);
  });

  it("refuses malformed handles (400) and unknown leases (410)", async () => {
    await createTopic("h");
    expect((await req("POST", "/v1/topics/h/ack")).status).toBe(400);
    expect((await ack("h", "garbage")).status).toBe(400);
    expect((await ack("h", "0:0:zzzzzzzzzzzz.1")).status).toBe(400);
    expect((await ack("h", "5:0:0123456789ab.1")).status).toBe(400); // no partition 5
    // Narad's rule: an extend other than true/1/0/false/empty is 400.
    expect((await ack("h", "0:0:0123456789ab.1", "maybe")).status).toBe(400);
    expect((await ack("h", "0:0:0123456789ab.1", "false")).status).toBe(410);
    expect((await ack("h", "0:0:1")).status).toBe(410); // a Narad (Go) handle: stale here
    const gone = await ack("h", "0:0:0123456789ab.1");
    expect(gone.status).toBe(410);
    expect(gone.json().error).toMatch(/stale/);
    expect((await ack("h", "other:0:0:0123456789ab.1")).status).toBe(410);
    expect((await req("GET", "/v1/topics/h/consume?group=bad/name")).status).toBe(400);
    expect((await req("GET", "/v1/topics/h/consume?wait=soon")).status).toBe(400);
    expect((await req("GET", "/v1/topics/nope/consume")).status).toBe(404);
  });

  it("keeps replay by offset read-only", async () => {
    await createTopic("r");
    await produce("r", 1);
    await visible("r", 1);
    const r = await req("GET", "/v1/topics/r/consume?partition=0&offset=0");
    expect(r.status).toBe(200);
    expect(r.json().receipt_handle).toBeUndefined();
    expect((await req("GET", "/v1/topics/r/consume?partition=0&offset=1")).status).toBe(204);
    expect((await req("GET", "/v1/topics/r/consume?offset=0")).status).toBe(400);
    expect((await consume("r"))?.offset).toBe(0); // replay leased nothing
  });

  it("round-robins over partitions when none is named", async () => {
    expect((await req("POST", "/v1/topics", { name: "rr", partitions: 3 })).status).toBe(201);
    for (const p of [0, 1, 2]) {
      await produce("rr", 2, p);
      await visible("rr", 2, p);
    }
    const got = [];
    for (let i = 0; i < 6; i++) got.push(((await consume("rr", "")) as Msg).partition);
    expect(got.slice(0, 3).sort()).toEqual([0, 1, 2]);
    expect(got.sort()).toEqual([0, 0, 1, 1, 2, 2]);
    expect(await consume("rr", "")).toBeUndefined();
  });

  it("gives each group its own frontier and leases; groups can be listed and deleted", async () => {
    await createTopic("g");
    await produce("g", 2);
    await visible("g", 2);
    const a = (await consume("g", "partition=0&group=alpha")) as Msg;
    expect(a.receipt_handle).toMatch(/^alpha:0:0:/);
    expect((await ack("g", a.receipt_handle!)).status).toBe(204);
    const b = (await consume("g", "partition=0&group=beta")) as Msg;
    expect(b.offset).toBe(0);
    expect((await consume("g", "partition=0&group=alpha"))?.offset).toBe(1);
    const list = await groups("g");
    expect(list.map((x) => x.name)).toEqual(["alpha", "beta"]);
    expect(list[0]?.partitions[0]).toMatchObject({ committed: 1, in_flight: 1, lag: 1 });
    expect(list[1]?.partitions[0]).toMatchObject({ committed: 0, in_flight: 1, lag: 2 });
    expect((await req("DELETE", "/v1/topics/g/groups/beta")).status).toBe(204);
    expect((await req("DELETE", "/v1/topics/g/groups/beta")).status).toBe(404);
    expect((await ack("g", b.receipt_handle!)).status).toBe(410);
    expect((await groups("g")).map((x) => x.name)).toEqual(["alpha"]);
  });

  it("deleting a topic removes its consumer state", async () => {
    await createTopic("d");
    await produce("d", 1);
    await visible("d", 1);
    const m = (await consume("d")) as Msg;
    expect((await ack("d", m.receipt_handle!)).status).toBe(204);
    await sleep(250);
    expect((await req("DELETE", "/v1/topics/d")).status).toBe(204);
    await createTopic("d");
    await produce("d", 1);
    await visible("d", 1);
    expect((await consume("d"))?.offset).toBe(0);
    expect((await ack("d", m.receipt_handle!)).status).toBe(410);
  });
});
