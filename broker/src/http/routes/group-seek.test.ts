// POST /v1/topics/{t}/groups/{g}/seek through inject on a real node (WAL,
// logs, dispatcher, file metastore in a temp dir): replay from earliest,
// skip to latest, an explicit offset, leases dropped, the frontier file
// written before the answer, and every bad input a JSON 400/404.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
  receipt_handle: string;
}

async function req(method: "GET" | "POST", url: string, body?: unknown, raw?: string) {
  const res = await broker.app.inject({
    method,
    url,
    ...(body === undefined && raw === undefined
      ? {}
      : { payload: raw ?? JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.statusCode, text: res.body, json: () => JSON.parse(res.body) };
}

const seek = (topic: string, group: string, body: unknown) =>
  req("POST", `/v1/topics/${topic}/groups/${group}/seek`, body);

async function setup(name: string, partitions: number, perPartition: number): Promise<void> {
  expect((await req("POST", "/v1/topics", { name, partitions })).status).toBe(201);
  for (let p = 0; p < partitions; p++)
    for (let i = 0; i < perPartition; i++) {
      const r = await req("POST", `/v1/topics/${name}/produce?partition=${p}`, { p, i });
      expect(r.status).toBe(202);
    }
  for (let i = 0; i < 500; i++) {
    const stats = (await req("GET", `/v1/topics/${name}`)).json().partition_stats as Array<{
      high_watermark: number;
    }>;
    if (stats.every((s) => s.high_watermark === perPartition)) return;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  throw new Error(`records of ${name} not visible`);
}

async function consume(topic: string, group: string, partition = 0): Promise<Msg | undefined> {
  const r = await req("GET", `/v1/topics/${topic}/consume?partition=${partition}&group=${group}`);
  if (r.status === 204) return undefined;
  expect(r.status, r.text).toBe(200);
  return r.json() as Msg;
}

async function ack(topic: string, handle: string) {
  return (await req("POST", `/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(handle)}`)).status;
}

/** Consumes and acks everything in partition 0; returns the offsets seen. */
async function drain(topic: string, group: string, partition = 0): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const m = await consume(topic, group, partition);
    if (m === undefined) return seen;
    seen.push(m.offset);
    expect(await ack(topic, m.receipt_handle)).toBe(204);
  }
}

async function committed(topic: string, group: string): Promise<number[]> {
  const groups = (await req("GET", `/v1/topics/${topic}/groups`)).json().groups as Array<{
    name: string;
    partitions: Array<{ committed: number }>;
  }>;
  return groups.find((g) => g.name === group)?.partitions.map((p) => p.committed) ?? [];
}

/** The durable frontier file, read directly: 8 bytes big-endian. */
function frontierFile(topic: string, partition: number, group: string): number {
  const p = `p${String(partition).padStart(5, "0")}`;
  return Number(
    readFileSync(join(dir, "topics", topic, p, "consumers", `${group}.offset`)).readBigUInt64BE(0),
  );
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-seek-"));
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
});

afterEach(async () => {
  await broker.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

describe("group seek", () => {
  it("to earliest replays every record; the frontier file holds the new offset when 200 comes back", async () => {
    await setup("s", 1, 5);
    expect(await drain("s", "billing")).toEqual([0, 1, 2, 3, 4]);
    const r = await seek("s", "billing", { to: "earliest" });
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toEqual({
      topic: "s",
      name: "billing",
      partitions: [{ partition: 0, previous: 5, committed: 0 }],
    });
    expect(frontierFile("s", 0, "billing")).toBe(0);
    expect(await committed("s", "billing")).toEqual([0]);
    expect(await drain("s", "billing")).toEqual([0, 1, 2, 3, 4]);
  });

  it("to latest skips the backlog; a lease taken before the seek answers 410", async () => {
    await setup("l", 1, 4);
    const held = (await consume("l", "g")) as Msg;
    const r = await seek("l", "g", { to: "latest" });
    expect(r.json().partitions).toEqual([{ partition: 0, previous: 0, committed: 4 }]);
    expect(await ack("l", held.receipt_handle)).toBe(410);
    expect(await consume("l", "g")).toBeUndefined();
    expect(await req("POST", "/v1/topics/l/produce?partition=0", { late: true }).then((x) => x.status)).toBe(
      202,
    );
    let late: Msg | undefined;
    for (let i = 0; i < 300 && late === undefined; i++) {
      late = await consume("l", "g");
      if (late === undefined) await new Promise((ok) => setTimeout(ok, 10));
    }
    expect(late?.offset).toBe(4);
  });

  it("an explicit offset in one partition; the other partitions keep theirs", async () => {
    await setup("o", 3, 3);
    for (let p = 0; p < 3; p++) await drain("o", "g", p);
    const r = await seek("o", "g", { partition: 1, offset: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.json().partitions).toEqual([{ partition: 1, previous: 3, committed: 1 }]);
    expect(await committed("o", "g")).toEqual([3, 1, 3]);
    expect(frontierFile("o", 1, "g")).toBe(1);
    expect(await drain("o", "g", 1)).toEqual([1, 2]);
  });

  it("without partition, earliest/latest move every partition; an unknown group is created", async () => {
    await setup("a", 3, 2);
    const r = await seek("a", "fresh", { to: "latest" });
    expect(r.status, r.text).toBe(200);
    expect(r.json().partitions.map((p: { committed: number }) => p.committed)).toEqual([2, 2, 2]);
    expect(await committed("a", "fresh")).toEqual([2, 2, 2]);
    for (let p = 0; p < 3; p++) expect(await consume("a", "fresh", p)).toBeUndefined();
  });

  it("the new offset survives a restart", async () => {
    await setup("r", 1, 3);
    await drain("r", "g");
    expect((await seek("r", "g", { partition: 0, offset: 2 })).status).toBe(200);
    await broker.shutdown();
    const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
    broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    expect(await drain("r", "g")).toEqual([2]);
  });

  it("refuses bad input with a JSON 4xx and leaves the group as it was", async () => {
    await setup("b", 2, 3);
    const held = (await consume("b", "g")) as Msg;
    const cases: Array<[unknown, RegExp]> = [
      [[], /JSON object/],
      ["earliest", /JSON object/],
      [{}, /exactly one of/],
      [{ to: "earliest", offset: 1, partition: 0 }, /exactly one of/],
      [{ to: "first" }, /to must be "earliest" or "latest"/],
      [{ offset: 1 }, /offset needs a partition/],
      [{ offset: -1, partition: 0 }, /non-negative integer/],
      [{ offset: 1.5, partition: 0 }, /non-negative integer/],
      [{ offset: "1", partition: 0 }, /non-negative integer/],
      [{ to: "latest", partition: 2 }, /partition 2 does not exist: the topic has 2/],
      [{ to: "latest", partition: -1 }, /partition must be a non-negative integer/],
      [{ to: "latest", partitions: [0] }, /unknown field "partitions"/],
      [{ offset: 4, partition: 0 }, /offset 4 is past the partition's high watermark 3/],
    ];
    for (const [body, message] of cases) {
      const r = await seek("b", "g", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json().code, JSON.stringify(body)).toBe("bad_request");
      expect(r.json().error, JSON.stringify(body)).toMatch(message);
    }
    const notJson = await req("POST", "/v1/topics/b/groups/g/seek", undefined, "{to:");
    expect(notJson.status).toBe(400);
    expect(typeof notJson.json().code).toBe("string");
    const badGroup = await seek("b", "no%20spaces", { to: "latest" });
    expect(badGroup.status).toBe(400);
    expect(badGroup.json().error).toMatch(/group must match/);
    const noTopic = await seek("nope", "g", { to: "latest" });
    expect(noTopic.status).toBe(404);
    expect(noTopic.json().code).toBe("topic_not_found");
    // Nothing moved: the lease taken before the refusals is still live.
    expect(await committed("b", "g")).toEqual([0, 0]);
    expect(await ack("b", held.receipt_handle)).toBe(204);
  });

  it("concurrent seeks and consumes of one partition end at the last seek's offset", async () => {
    await setup("c", 1, 10);
    const ops: Array<Promise<unknown>> = [];
    for (let i = 0; i < 10; i++) {
      ops.push(seek("c", "g", { partition: 0, offset: i }));
      ops.push(consume("c", "g"));
    }
    ops.push(seek("c", "g", { partition: 0, offset: 7 }));
    await Promise.all(ops);
    expect(frontierFile("c", 0, "g")).toBe(7);
    expect(await committed("c", "g")).toEqual([7]);
  });
});
