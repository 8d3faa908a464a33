// Partition moves (moves/, ARCHITECTURE.md §6) with three in-process
// brokers sharing one in-memory metastore (as cluster.test.ts): the test
// plays the operator (PUT/GET/DELETE /admin/v1/moves on the destination,
// then the owner swap in the metastore). Under continuous produce to every
// node it checks that a moved partition keeps every acknowledged record
// exactly once at the same offsets, keeps its consumer frontier, and that
// the old owner deletes its copy; then cancellation, a destination crash
// while the source is frozen (the freeze lapses) and a source crash after
// `ready` (cancel; the restarted source owns and serves the partition).
// crash() is the in-process kill -9: no drain, no flush.

import { closeSync, existsSync, openSync, readdirSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { partitionDirName } from "../src/log/log-store.ts";
import type { Metastore } from "../src/meta/types.ts";
import {
  drained,
  hwm,
  type TestNode as Node,
  eventually as poll,
  produceIds,
  req,
  type TestCluster,
  testClusters,
} from "./harness/test-cluster.ts";

const freezeTtlMs = 4_000;
// Move timings short enough for a test (a 4 s freeze ttl the tests outlive),
// and a commit deadline shorter than the production 30 s.
const clusters = testClusters(afterEach, {
  prefix: "narad-moves",
  dispatch: { commitTimeoutMs: 5_000 },
  moveTiming: { freezeTtlMs, renewIntervalMs: 1_000, retryMs: 300, sourceDeleteDelayMs: 1_000 },
});

/** Wraps a node's metastore view, e.g. to make its watch lag behind the others. */
type ViewWrap = (view: Metastore) => Metastore;

const eventually = (what: string, timeoutMs: number, check: () => Promise<boolean>) =>
  poll(what, timeoutMs, check, 50);

const pad = "x".repeat(1_000);

/** One produce-batch request of `ids` pinned to `partition`; resolves whether it was acknowledged (202). */
async function produceBatch(node: Node, topic: string, ids: number[], partition: number): Promise<boolean> {
  return (await produceIds(node, topic, ids, partition, pad)).status === 202;
}

/** Produces to every node in turn, into every partition, until stopped; records acknowledged ids. */
function continuousProducer(nodes: Node[], topic: string, partitions: number) {
  const acked: number[] = [];
  let stop = false;
  let burst = true;
  let next = 0;
  let inFlight: Promise<boolean> = Promise.resolve(true);
  const run = (async () => {
    for (let round = 0; !stop; round++) {
      const node = nodes[round % nodes.length]!;
      // Large batches fill the partitions first; then a steady trickle.
      const ids = Array.from({ length: burst ? 300 : 40 }, () => next++);
      // Every node produces into every partition (not node i → partition i).
      const partition = (round + Math.floor(round / nodes.length)) % partitions;
      inFlight = produceBatch(node, topic, ids, partition);
      if (await inFlight) acked.push(...ids);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    acked,
    calm: () => {
      burst = false;
    },
    /** Resolves once the request in flight now has its answer (requests go one at a time). */
    settled: async (): Promise<void> => {
      await inFlight.catch(() => false);
    },
    stop: async () => {
      stop = true;
      await run;
    },
  };
}

/** (offset, id) of every visible record of one partition, read through `node`. */
async function readPartition(node: Node, topic: string, p: number): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = [];
  let offset = 0;
  for (;;) {
    const r = await req(node, "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
    if (r.status !== 200) throw new Error(`read ${topic}/${p} via ${node.id}: ${r.status} ${r.text}`);
    const page = r.json() as {
      records: Array<{ offset: number; payload: { id: number } }>;
      next_offset: number;
    };
    for (const m of page.records) out.push([m.offset, m.payload.id]);
    if (page.records.length === 0) return out;
    offset = page.next_offset;
  }
}

async function moveState(node: Node, topic: string, p: number): Promise<Record<string, unknown>> {
  const r = await req(node, "GET", `/admin/v1/moves/${topic}/${p}`);
  return r.status === 200 ? (r.json() as Record<string, unknown>) : { state: `http ${r.status}` };
}

async function waitState(node: Node, topic: string, p: number, state: string, timeoutMs = 60_000) {
  let last: Record<string, unknown> = {};
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    last = await moveState(node, topic, p);
    if (last.state === state) return last;
    if (Date.now() > deadline)
      throw new Error(
        `move ${topic}/${p} at ${node.id} not ${state} after ${timeoutMs} ms: ${JSON.stringify(last)}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function metric(node: Node, name: string): Promise<number> {
  const text = (await req(node, "GET", "/metrics")).text;
  let sum = 0;
  for (const l of text.split("\n"))
    if (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) sum += Number(l.split(" ").pop());
  return sum;
}

/** Leases and acks `count` records of partition p for group g through `node`; returns the frontier. */
async function consumeAndAck(
  node: Node,
  topic: string,
  p: number,
  group: string,
  count: number,
): Promise<number> {
  for (let i = 0; i < count; i++) {
    const r = await req(node, "GET", `/v1/topics/${topic}/consume?partition=${p}&group=${group}&wait=2s`);
    expect(r.status, r.text).toBe(200);
    const h = encodeURIComponent(r.json().receipt_handle as string);
    const a = await req(node, "POST", `/v1/topics/${topic}/ack?receipt_handle=${h}&group=${group}`);
    expect(a.status, a.text).toBe(204);
  }
  return committed(node, topic, p, group);
}

async function committed(node: Node, topic: string, p: number, group: string): Promise<number> {
  const r = await req(node, "GET", `/v1/topics/${topic}/groups`);
  expect(r.status, r.text).toBe(200);
  const g = (
    r.json().groups as Array<{ name: string; partitions: Array<{ partition: number; committed: number }> }>
  ).find((x) => x.name === group);
  return g?.partitions.find((x) => x.partition === p)?.committed ?? -1;
}

async function setup(topic: string, wrapA?: ViewWrap) {
  const tc: TestCluster = clusters.create();
  const { mc } = tc;
  const nodes: Node[] = [];
  for (const id of ["a", "b", "c"])
    nodes.push(await tc.start(id, id === "a" && wrapA ? { metastore: (_id, view) => wrapA(view) } : {}));
  const r = await req(nodes[0]!, "POST", "/v1/topics", { name: topic, partitions: 3 });
  expect(r.status, r.text).toBe(201);
  const p = mc.owners(topic).indexOf("a");
  expect(p).toBeGreaterThanOrEqual(0);
  return { tc, mc, nodes, a: nodes[0]!, b: nodes[1]!, c: nodes[2]!, p };
}

describe("partition moves (3 in-process brokers)", () => {
  it("moves a partition under continuous produce: same records at the same offsets, frontier kept, old copy deleted", async () => {
    const { mc, nodes, a, b, p } = await setup("m");
    const producer = continuousProducer(nodes, "m", 3);
    // Some MiB in the partition before the move, and a consumer frontier.
    await eventually("partition has 4 MiB", 60_000, async () => (await hwm(a, "m", p)) >= 4_000);
    producer.calm();
    const frontier = await consumeAndAck(a, "m", p, "g", 25);
    expect(frontier).toBe(25);

    // Scale-down: the operator marks a Decommissioning. Its own WAL takes
    // no new produce: it forwards produce to a peer's WAL (answering after
    // that fsync), and keeps serving reads and dispatching its WAL.
    mc.setState("a", "Decommissioning");
    // A request a admitted just before the flip may still be in its group
    // commit; it is acknowledged (durable in a's WAL, which a dispatches) once
    // answered. Every request after it is forwarded. wal.nextSeq counts
    // durable records, so it is read once that answer is in.
    await producer.settled();
    const seqBefore = (await req(a, "GET", "/admin/v1/status")).json().wal.nextSeq as number;
    const forwarded = await req(a, "POST", `/v1/topics/m/produce?partition=${p}`, JSON.stringify({ id: -1 }));
    expect(forwarded.status, forwarded.text).toBe(202);
    producer.acked.push(-1);
    expect((await req(a, "GET", "/admin/v1/status")).json().wal.nextSeq).toBe(seqBefore);
    expect((await req(a, "GET", "/admin/v1/status")).json()).toMatchObject({
      memberState: "Decommissioning",
      ownedPartitions: 1,
    });

    // Bad requests first: clear 4xx with a JSON error.
    expect((await req(b, "PUT", `/admin/v1/moves/m/${p}`, {})).status).toBe(400);
    expect((await req(b, "PUT", `/admin/v1/moves/m/${p}`, { from: "b" })).status).toBe(400);
    expect((await req(b, "PUT", `/admin/v1/moves/m/${p}`, { from: "zz" })).status).toBe(400);
    expect((await req(b, "PUT", `/admin/v1/moves/nope/${p}`, { from: "a" })).status).toBe(404);
    expect((await req(b, "PUT", "/admin/v1/moves/m/9", { from: "a" })).status).toBe(400);
    expect((await req(b, "GET", `/admin/v1/moves/m/${p}`)).status).toBe(404);

    const started = Date.now();
    const put = await req(b, "PUT", `/admin/v1/moves/m/${p}`, { from: "a" });
    expect(put.status, put.text).toBe(202);
    expect(put.json()).toMatchObject({ topic: "m", partition: p, from: "a" });
    // Idempotent; another source while it runs is a conflict.
    expect((await req(b, "PUT", `/admin/v1/moves/m/${p}`, { from: "a" })).status).toBe(202);
    expect((await req(b, "PUT", `/admin/v1/moves/m/${p}`, { from: "c" })).status).toBe(409);

    const ready = await waitState(b, "m", p, "ready");
    const readyMs = Date.now() - started;
    expect(ready.sourceHwm).toBe(ready.destHwm);
    expect(ready.copiedBytes as number).toBeGreaterThan(4_000_000);

    // Frozen: a's HWM stands still under produce, and queue leasing there is refused.
    const frozenHwm = await hwm(a, "m", p);
    expect(frozenHwm).toBe(ready.sourceHwm);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await hwm(a, "m", p)).toBe(frozenHwm);
    const lease = await req(a, "GET", `/v1/topics/m/consume?partition=${p}&group=g`);
    expect(lease.status, lease.text).toBe(503);
    const before = await readPartition(a, "m", p);
    expect(before.length).toBe(frozenHwm);

    // The operator swaps the owner; b installs the copy.
    mc.setOwner("m", p, "b");
    const done = await waitState(b, "m", p, "done");
    const moveMs = Date.now() - started;
    expect(done.destHwm).toBe(frozenHwm);
    expect((await req(b, "DELETE", `/admin/v1/moves/m/${p}`)).status).toBe(409);

    // Produce keeps flowing into the partition at its new owner.
    await eventually("b's partition grows", 30_000, async () => (await hwm(b, "m", p)) > frozenHwm);
    await producer.stop();
    await eventually("every WAL drained", 60_000, () => drained(nodes));

    // Same records at the same offsets, then the rest; every acked id exactly once overall.
    const after = await readPartition(b, "m", p);
    expect(after.slice(0, before.length)).toEqual(before);
    const all: number[] = [];
    for (let q = 0; q < 3; q++) for (const [, id] of await readPartition(nodes[q]!, "m", q)) all.push(id);
    const sorted = [...all].sort((x, y) => x - y);
    expect(
      sorted.filter((v, i) => i > 0 && sorted[i - 1] === v),
      "duplicates",
    ).toEqual([]);
    const have = new Set(all);
    expect(
      producer.acked.filter((id) => !have.has(id)),
      "lost",
    ).toEqual([]);

    // The consumer frontier moved with the partition: the next lease is offset 25.
    expect(await committed(b, "m", p, "g")).toBe(frontier);
    const next = await req(b, "GET", `/v1/topics/m/consume?partition=${p}&group=g&wait=2s`);
    expect(next.status, next.text).toBe(200);
    expect(next.json().offset).toBe(frontier);

    // a deleted its copy; its status owns nothing of this topic now.
    await eventually(
      "a deleted its copy",
      30_000,
      async () => !existsSync(join(a.dir, "topics", "m", partitionDirName(p))),
    );
    const st = (await req(a, "GET", "/admin/v1/status")).json();
    expect(st.ownedPartitions).toBe(0);
    expect(st.wal.pendingRecords).toBe(0);
    // Removed (the operator is about to delete its pod and volume): still
    // nothing into its own WAL; produce it receives goes to a peer's.
    mc.setState("a", "Removed");
    const removedSeq = st.wal.nextSeq as number;
    const afterRemoved = await req(
      a,
      "POST",
      `/v1/topics/m/produce?partition=${p}`,
      JSON.stringify({ id: -2 }),
    );
    expect(afterRemoved.status, afterRemoved.text).toBe(202);
    expect((await req(a, "GET", "/admin/v1/status")).json().wal.nextSeq).toBe(removedSeq);
    await eventually("the forwarded record reaches the new owner", 30_000, async () =>
      (await readPartition(b, "m", p)).some(([, id]) => id === -2),
    );
    expect((await req(a, "GET", "/admin/v1/status")).json()).toMatchObject({
      memberState: "Removed",
      draining: true,
    });
    // The freeze held records; it never made a dispatcher reroute them (keys stay together).
    for (const n of nodes) expect(await metric(n, "narad_dispatch_rerouted_records_total")).toBe(0);
    console.log(
      `moved ${((done.copiedBytes as number) / 1024 / 1024).toFixed(1)} MiB (${frozenHwm} records, ${done.rounds} catch-up rounds) under produce: ready after ${readyMs} ms, done ${moveMs} ms after the PUT (swap at ready + 1.5 s)`,
    );
  }, 180_000);

  it("a source whose view lags the swap stays frozen: what it holds lands at the new owner, not in its old copy", async () => {
    // a's metastore view keeps naming a as the owner of (t, p) while `lag`
    // is set, like a watch that has not delivered the swap yet.
    let lag: { topic: string; partition: number } | undefined;
    const lagging: ViewWrap = (view) =>
      new Proxy(view, {
        get(target, prop, receiver) {
          if (prop === "ownerOf")
            return (t: string, q: number) =>
              lag !== undefined && lag.topic === t && lag.partition === q ? "a" : target.ownerOf(t, q);
          const value = Reflect.get(target, prop, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const { mc, nodes, a, b, p } = await setup("l", lagging);
    const acked: number[] = [];
    let next = 0;
    const batch = async (via: Node, n: number) => {
      const ids = Array.from({ length: n }, () => next++);
      if (await produceBatch(via, "l", ids, p)) acked.push(...ids);
    };
    for (let i = 0; i < 5; i++) await batch(i % 2 === 0 ? a : nodes[2]!, 100);
    await eventually("a holds the records", 30_000, async () => (await hwm(a, "l", p)) >= 500);

    expect((await req(b, "PUT", `/admin/v1/moves/l/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "l", p, "ready");
    lag = { topic: "l", partition: p };
    mc.setOwner("l", p, "b");
    await waitState(b, "l", p, "done");
    // a still believes it owns p: records it takes now must wait, not land
    // in the copy it gave away. The view lags past the freeze's ttl, so a
    // freeze that lapsed on a timer would let a's own dispatcher commit them
    // locally (issue #13 item 4: those records were stranded in the old copy).
    await batch(a, 50);
    await new Promise((r) => setTimeout(r, freezeTtlMs + 2_000));
    await batch(a, 50);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await hwm(a, "l", p)).toBe(500); // nothing landed in the given-away copy
    lag = undefined;
    mc.setState("c", "Active"); // any metastore change wakes a's listeners, as a watch event would
    await eventually("every WAL drained", 60_000, () => drained(nodes));
    const ids = (await readPartition(b, "l", p)).map(([, id]) => id);
    expect(acked.filter((id) => !ids.includes(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  }, 120_000);

  it("the source keeps its copy while the new owner's bytes differ from it, whatever HWM it reports", async () => {
    const { mc, nodes, a, b, p } = await setup("v");
    const acked: number[] = [];
    for (let i = 0; i < 6; i++) {
      const ids = Array.from({ length: 50 }, (_, j) => i * 50 + j);
      if (await produceBatch(nodes[i % 3]!, "v", ids, p)) acked.push(...ids);
    }
    await eventually("a holds the records", 30_000, async () => (await hwm(a, "v", p)) >= acked.length);
    expect((await req(b, "PUT", `/admin/v1/moves/v/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "v", p, "ready");
    mc.setOwner("v", p, "b");
    await waitState(b, "v", p, "done");
    // Damage b's installed copy in the middle (its HWM stays what it was).
    const segDir = join(b.dir, "topics", "v", partitionDirName(p));
    const seg = readdirSync(segDir).find((n) => n.endsWith(".log"))!;
    const fd = openSync(join(segDir, seg), "r+");
    writeSync(fd, Buffer.alloc(4096), 0, 4096, 8192);
    closeSync(fd);
    expect(await hwm(b, "v", p)).toBeGreaterThanOrEqual(acked.length);
    // The source checks every second (sourceDeleteDelayMs); a HWM check alone deleted it here.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(existsSync(join(a.dir, "topics", "v", partitionDirName(p)))).toBe(true);
  }, 120_000);

  it("cancel before the swap leaves the source a working owner", async () => {
    const { nodes, a, b, p } = await setup("c");
    const producer = continuousProducer(nodes, "c", 3);
    await eventually("some data", 30_000, async () => (await hwm(a, "c", p)) >= 500);
    producer.calm();
    expect((await req(b, "PUT", `/admin/v1/moves/c/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "c", p, "ready");
    const frozen = await hwm(a, "c", p);
    const del = await req(b, "DELETE", `/admin/v1/moves/c/${p}`);
    expect(del.status, del.text).toBe(200);
    expect(del.json().state).toBe("cancelled");
    expect((await moveState(b, "c", p)).state).toBe("cancelled");
    // Unfrozen at once (not after the ttl): the held records land.
    await eventually("a commits again", freezeTtlMs - 500, async () => (await hwm(a, "c", p)) > frozen);
    expect(existsSync(join(b.dir, "moves", "c", partitionDirName(p)))).toBe(false);
    await producer.stop();
    await eventually("every WAL drained", 60_000, () => drained(nodes));
    const ids = (await readPartition(a, "c", p)).map(([, id]) => id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 120_000);

  it("a destination killed while the source is frozen: the freeze lapses and the source commits again", async () => {
    const { tc, nodes, a, b, p } = await setup("k");
    const producer = continuousProducer([a, nodes[2]!], "k", 3);
    await eventually("some data", 30_000, async () => (await hwm(a, "k", p)) >= 500);
    producer.calm();
    expect((await req(b, "PUT", `/admin/v1/moves/k/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "k", p, "ready");
    const frozen = await hwm(a, "k", p);
    await tc.kill("b");
    const killedAt = Date.now();
    await eventually("a commits again after the ttl", 30_000, async () => (await hwm(a, "k", p)) > frozen);
    expect(Date.now() - killedAt).toBeGreaterThan(freezeTtlMs / 2);

    // Restarted on its data dir, b resumes the move from its staged copy.
    const b2 = await tc.restart("b");
    const resumed = await waitState(b2, "k", p, "ready");
    expect(resumed.sourceHwm).toBe(resumed.destHwm);
    // Only what a took after the freeze lapsed was fetched again (records are ~1.05 KiB on disk).
    expect(resumed.copiedBytes as number).toBeLessThan(
      ((resumed.destHwm as number) - frozen) * 1_100 + 4_096,
    );
    const del = await req(b2, "DELETE", `/admin/v1/moves/k/${p}`);
    expect(del.json().state).toBe("cancelled");
    await producer.stop();
  }, 120_000);

  it("a destination killed after ready, the swap made while it is down: it finishes on restart; the source keeps its copy until then", async () => {
    const { tc, mc, nodes, a, b, c, p } = await setup("w");
    const producer = continuousProducer([a, c], "w", 3);
    await eventually("some data", 30_000, async () => (await hwm(a, "w", p)) >= 500);
    producer.calm();
    expect((await req(b, "PUT", `/admin/v1/moves/w/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "w", p, "ready");
    const frozen = await hwm(a, "w", p);
    const before = await readPartition(a, "w", p);
    await tc.kill("b");
    mc.setOwner("w", p, "b");
    // Well past the source's delete delay: a must keep the only complete copy.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(existsSync(join(a.dir, "topics", "w", partitionDirName(p)))).toBe(true);
    const b2 = await tc.restart("b");
    const done = await waitState(b2, "w", p, "done");
    expect(done.destHwm).toBeGreaterThanOrEqual(frozen);
    await eventually(
      "a deleted its copy",
      30_000,
      async () => !existsSync(join(a.dir, "topics", "w", partitionDirName(p))),
    );
    await producer.stop();
    await eventually("every WAL drained", 60_000, () => drained([a, b2, c]));
    const after = await readPartition(b2, "w", p);
    expect(after.slice(0, before.length)).toEqual(before);
    const ids = after.map(([, id]) => id);
    expect(new Set(ids).size).toBe(ids.length);
    const have = new Set<number>();
    for (let q = 0; q < 3; q++) for (const [, id] of await readPartition(b2, "w", q)) have.add(id);
    expect(
      producer.acked.filter((id) => !have.has(id)),
      "lost",
    ).toEqual([]);
    expect(nodes.length).toBe(3);
  }, 120_000);

  it("a source restarted between the swap and deleting its copy deletes it after the restart", async () => {
    const { tc, mc, a, b, p } = await setup("o");
    for (let i = 0; i < 5; i++) expect(await produceBatch(a, "o", [i], p)).toBe(true);
    await eventually("visible", 30_000, async () => (await hwm(a, "o", p)) === 5);
    expect((await req(b, "PUT", `/admin/v1/moves/o/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "o", p, "ready");
    mc.setOwner("o", p, "b");
    const dir = join(a.dir, "topics", "o", partitionDirName(p));
    await eventually("a marked its copy", 10_000, async () => existsSync(join(dir, "moved-away")));
    expect((await req(a, "GET", "/admin/v1/status")).json()).toMatchObject({
      ownedPartitions: 0,
      movedAwayCopies: 1,
    });
    await tc.kill("a");
    expect(existsSync(dir)).toBe(true);
    await waitState(b, "o", p, "done");
    const a2 = await tc.restart("a");
    await eventually("restarted a deleted its copy", 30_000, async () => !existsSync(dir));
    await eventually(
      "status shows no copy kept",
      10_000,
      async () => (await req(a2, "GET", "/admin/v1/status")).json().movedAwayCopies === 0,
    );
    expect((await readPartition(a2, "o", p)).map(([, id]) => id)).toEqual([0, 1, 2, 3, 4]);
  }, 120_000);

  it("moves a partition there and back; the old owner's leftovers never resurface", async () => {
    const { mc, nodes, a, b, p } = await setup("r");
    for (let i = 0; i < 10; i++)
      expect(await produceBatch(nodes[i % 3]!, "r", [i * 2, i * 2 + 1], p)).toBe(true);
    await eventually("visible", 30_000, async () => (await hwm(a, "r", p)) === 20);
    const before = await readPartition(a, "r", p);
    // The source must be the owner; bodies and unknown moves get clear 4xx.
    const stale = await req(b, "PUT", `/admin/v1/moves/r/${p}`, { from: "c" });
    expect(stale.status).toBe(409);
    expect(stale.json().error).toMatch(/does not own/);
    expect((await req(b, "PUT", `/admin/v1/moves/r/${p}`, [1])).status).toBe(400);
    expect((await req(b, "PUT", `/admin/v1/moves/r/x`, { from: "a" })).status).toBe(400);
    const unknown = await req(b, "DELETE", `/admin/v1/moves/r/${p}`);
    expect(unknown.status).toBe(404);
    expect(unknown.json().error).toMatch(/no move/);

    expect((await req(b, "PUT", `/admin/v1/moves/r/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "r", p, "ready");
    mc.setOwner("r", p, "b");
    await waitState(b, "r", p, "done");
    await eventually(
      "a deleted its copy",
      30_000,
      async () => !existsSync(join(a.dir, "topics", "r", partitionDirName(p))),
    );
    expect(await produceBatch(a, "r", [100, 101], p)).toBe(true);
    await eventually("at b", 30_000, async () => (await hwm(b, "r", p)) === 22);

    // And back to a (b's finished move from a does not block it).
    expect((await req(a, "PUT", `/admin/v1/moves/r/${p}`, { from: "b" })).status).toBe(202);
    await waitState(a, "r", p, "ready");
    mc.setOwner("r", p, "a");
    await waitState(a, "r", p, "done");
    expect(await produceBatch(b, "r", [102, 103], p)).toBe(true);
    await eventually("at a", 30_000, async () => (await hwm(a, "r", p)) === 24);
    const after = await readPartition(a, "r", p);
    expect(after.slice(0, 20)).toEqual(before);
    expect(after.map(([, id]) => id).slice(20)).toEqual([100, 101, 102, 103]);
    await eventually(
      "b deleted its copy",
      30_000,
      async () => !existsSync(join(b.dir, "topics", "r", partitionDirName(p))),
    );
  }, 120_000);

  it("a source killed after ready: cancel, and the restarted source owns and serves the partition", async () => {
    const { tc, mc, nodes, a, b, c, p } = await setup("s");
    const producer = continuousProducer([b, c], "s", 3);
    await eventually("some data", 30_000, async () => (await hwm(a, "s", p)) >= 500);
    producer.calm();
    expect((await req(b, "PUT", `/admin/v1/moves/s/${p}`, { from: "a" })).status).toBe(202);
    await waitState(b, "s", p, "ready");
    const frozen = await hwm(a, "s", p);
    const before = await readPartition(a, "s", p);
    await tc.kill("a");
    const del = await req(b, "DELETE", `/admin/v1/moves/s/${p}`);
    expect(del.status, del.text).toBe(200);
    expect(del.json().state).toBe("cancelled");
    const a2 = await tc.restart("a");
    expect(mc.owners("s")[p]).toBe("a");
    await eventually("a commits again", 30_000, async () => (await hwm(a2, "s", p)) > frozen);
    await producer.stop();
    await eventually("every WAL drained", 60_000, () => drained([a2, b, c]));
    const after = await readPartition(b, "s", p);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(new Set(after.map(([, id]) => id)).size).toBe(after.length);
    expect(nodes.length).toBe(3);
  }, 120_000);
});
