// Named subscriptions through inject on a real node (file metastore in a temp
// dir): declared groups with their own visibility timeout and caps, managed
// with POST/PATCH /v1/topics and PUT/GET/DELETE /v1/topics/{t}/groups/{g}.

import { mkdtempSync, rmSync } from "node:fs";
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
  receipt_handle?: string;
}

interface Group {
  name: string;
  declared: boolean;
  visibility_timeout_ms: number;
  max_in_flight_per_partition: number;
  max_acked_ahead_per_partition: number;
  lag: number;
}

async function req(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", url: string, body?: unknown) {
  const res = await broker.app.inject({
    method,
    url,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.statusCode, text: res.body, json: () => JSON.parse(res.body) };
}

async function produce(topic: string, n: number) {
  for (let i = 0; i < n; i++) {
    const r = await broker.app.inject({
      method: "POST",
      url: `/v1/topics/${topic}/produce?partition=0`,
      payload: JSON.stringify({ i }),
    });
    expect(r.statusCode).toBe(202);
  }
  for (let i = 0; i < 500; i++) {
    const st = (await req("GET", `/v1/topics/${topic}?partition=0`)).json().partition_stats[0];
    if (st.high_watermark >= n) return;
    await sleep(10);
  }
  throw new Error(`records not visible in ${topic}`);
}

async function consume(topic: string, group: string): Promise<Msg | undefined> {
  const r = await req("GET", `/v1/topics/${topic}/consume?partition=0&group=${group}`);
  if (r.status === 204) return undefined;
  expect(r.status, r.text).toBe(200);
  return r.json() as Msg;
}

async function ack(topic: string, handle: string, extend?: string) {
  const e = extend === undefined ? "" : `&extend=${extend}`;
  return req("POST", `/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(handle)}${e}`);
}

async function groups(topic: string): Promise<Group[]> {
  const r = await req("GET", `/v1/topics/${topic}/groups`);
  expect(r.status, r.text).toBe(200);
  return r.json().groups as Group[];
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-subs-"));
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
});

afterEach(async () => {
  await broker.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("named subscriptions", () => {
  it("POST declares subscriptions; GET groups shows declared flags and effective settings", async () => {
    const r = await req("POST", "/v1/topics", {
      name: "t",
      partitions: 1,
      max_in_flight_per_partition: 50,
      subscriptions: [{ name: "fast", visibility_timeout_ms: 200 }, { name: "slow" }],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json().subscriptions).toEqual([{ name: "fast", visibility_timeout_ms: 200 }, { name: "slow" }]);
    await produce("t", 1);
    await consume("t", "adhoc");
    const gs = await groups("t");
    expect(gs.map((g) => [g.name, g.declared])).toEqual([
      ["adhoc", false],
      ["fast", true],
      ["slow", true],
    ]);
    expect(gs[1]).toMatchObject({
      visibility_timeout_ms: 200,
      max_in_flight_per_partition: 50,
      max_acked_ahead_per_partition: 1024,
      lag: 1,
    });
    expect(gs[0]).toMatchObject({ visibility_timeout_ms: 30_000, max_in_flight_per_partition: 50 });
  });

  it("POST/PATCH refuse bad subscription lists with 400; PATCH replaces the list", async () => {
    const dup = await req("POST", "/v1/topics", { name: "t", subscriptions: [{ name: "a" }, { name: "a" }] });
    expect(dup.status).toBe(400);
    expect(dup.text).toMatch(/listed twice/);
    expect((await req("POST", "/v1/topics", { name: "t", subscriptions: [{ name: "a/b" }] })).status).toBe(
      400,
    );
    expect((await req("POST", "/v1/topics", { name: "t", subscriptions: [{ name: "a" }] })).status).toBe(201);
    const p = await req("PATCH", "/v1/topics/t", {
      subscriptions: [{ name: "b", max_in_flight_per_partition: 2 }],
    });
    expect(p.status, p.text).toBe(200);
    expect(p.json().subscriptions).toEqual([{ name: "b", max_in_flight_per_partition: 2 }]);
    expect((await req("GET", "/v1/topics/t")).json().subscriptions).toEqual([
      { name: "b", max_in_flight_per_partition: 2 },
    ]);
    expect(
      (await req("PATCH", "/v1/topics/t", { subscriptions: [{ name: "c" }, { name: "c" }] })).status,
    ).toBe(400);
    expect((await req("PATCH", "/v1/topics/t", { subscriptions: [] })).status).toBe(200);
    expect((await groups("t")).map((g) => g.name)).toEqual([]);
  });

  it("PUT creates and updates one subscription; DELETE removes it from the declaration", async () => {
    expect((await req("POST", "/v1/topics", { name: "t", partitions: 1 })).status).toBe(201);
    const put = await req("PUT", "/v1/topics/t/groups/billing", { visibility_timeout_ms: 500 });
    expect(put.status, put.text).toBe(200);
    expect(put.json()).toEqual({
      topic: "t",
      name: "billing",
      declared: true,
      visibility_timeout_ms: 500,
      max_in_flight_per_partition: 1024,
      max_acked_ahead_per_partition: 1024,
    });
    const upd = await req("PUT", "/v1/topics/t/groups/billing", { max_in_flight_per_partition: 3 });
    expect(upd.json()).toMatchObject({ visibility_timeout_ms: 30_000, max_in_flight_per_partition: 3 });
    expect((await req("PUT", "/v1/topics/t/groups/empty")).status).toBe(200);
    expect((await req("GET", "/v1/topics/t")).json().subscriptions).toEqual([
      { name: "billing", max_in_flight_per_partition: 3 },
      { name: "empty" },
    ]);
    expect((await req("PUT", "/v1/topics/t/groups/billing", { visibility_timeout_ms: 0 })).status).toBe(400);
    expect((await req("PUT", "/v1/topics/t/groups/billing", { bogus: 1 })).status).toBe(400);
    expect((await req("PUT", "/v1/topics/t/groups/a%20b", {})).status).toBe(400);
    expect((await req("PUT", "/v1/topics/nope/groups/g", {})).status).toBe(404);
    // Declared but never consumed: DELETE still answers 204 and drops the declaration.
    expect((await req("DELETE", "/v1/topics/t/groups/empty")).status).toBe(204);
    expect((await req("DELETE", "/v1/topics/t/groups/empty")).status).toBe(404);
    expect((await req("GET", "/v1/topics/t")).json().subscriptions).toEqual([
      { name: "billing", max_in_flight_per_partition: 3 },
    ]);
    // Declared and consumed: state and declaration both go.
    await produce("t", 1);
    expect(await consume("t", "billing")).toBeDefined();
    expect((await req("DELETE", "/v1/topics/t/groups/billing")).status).toBe(204);
    expect((await req("GET", "/v1/topics/t")).json().subscriptions).toEqual([]);
    expect(await groups("t")).toEqual([]);
  });

  // Long enough that the two requests between a lease and its extend fit in it
  // on a loaded machine (200 ms did not: the extend found the lease expired).
  const FAST_LEASE_MS = 1_000;
  it("each group leases with its own visibility timeout (also for extend)", async () => {
    expect(
      (
        await req("POST", "/v1/topics", {
          name: "v",
          partitions: 1,
          subscriptions: [{ name: "fast", visibility_timeout_ms: FAST_LEASE_MS }],
        })
      ).status,
    ).toBe(201);
    await produce("v", 1);
    const fast = (await consume("v", "fast")) as Msg;
    const dflt = (await consume("v", "default")) as Msg;
    expect(fast.offset).toBe(0);
    expect(dflt.offset).toBe(0);
    await sleep(FAST_LEASE_MS + 300);
    // The short-lease group redelivers; the default group (topic's 30 s) does not.
    const again = (await consume("v", "fast")) as Msg;
    expect(again.offset).toBe(0);
    expect((await ack("v", fast.receipt_handle!)).status).toBe(410);
    expect(await consume("v", "default")).toBeUndefined();
    // extend renews for the group's lease, not the topic's 30 s.
    expect((await ack("v", again.receipt_handle!, "true")).status).toBe(204);
    await sleep(FAST_LEASE_MS + 300);
    expect((await consume("v", "fast"))?.offset).toBe(0);
    expect((await ack("v", dflt.receipt_handle!)).status).toBe(204);
  });

  it("each group has its own in-flight and acked-ahead caps; PUT changes apply to the next lease", async () => {
    expect(
      (
        await req("POST", "/v1/topics", {
          name: "c",
          partitions: 1,
          subscriptions: [
            { name: "one", max_in_flight_per_partition: 1 },
            { name: "ahead", max_acked_ahead_per_partition: 1 },
          ],
        })
      ).status,
    ).toBe(201);
    await produce("c", 4);
    // "one": a single lease at a time; the default group: all four.
    const first = (await consume("c", "one")) as Msg;
    expect(await consume("c", "one")).toBeUndefined();
    for (let i = 0; i < 4; i++) expect(await consume("c", "default")).toBeDefined();
    expect((await ack("c", first.receipt_handle!)).status).toBe(204);
    expect((await consume("c", "one"))?.offset).toBe(1);
    expect((await req("PUT", "/v1/topics/c/groups/one", { max_in_flight_per_partition: 3 })).status).toBe(
      200,
    );
    expect((await consume("c", "one"))?.offset).toBe(2);
    expect((await consume("c", "one"))?.offset).toBe(3);
    // "ahead": one acked record ahead of the frontier, the second is refused (503).
    const m = [
      await consume("c", "ahead"),
      await consume("c", "ahead"),
      await consume("c", "ahead"),
    ] as Msg[];
    expect((await ack("c", m[1]!.receipt_handle!)).status).toBe(204);
    expect((await ack("c", m[2]!.receipt_handle!)).status).toBe(503);
  });
});
