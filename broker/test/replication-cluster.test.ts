// Replication on an in-process cluster (ADR 0007): three brokers with real
// sockets and data dirs share one memory metastore; the test plays the
// operator (placement is the memory metastore's, elections are set by hand
// as operator/src/plan/election.ts would decide them). What runs for real:
// the replica manager's roles, the leader state's HWM and ISR writes, the
// fetchers, the commit wait, the dispatcher holding records for a leader.
import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../packages/api/src/v1alpha1/replication.ts";
import {
  drained,
  eventually,
  produceIds,
  req,
  type TestCluster,
  type TestNode,
  testClusters,
} from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach);

function volumeIdOf(node: TestNode): string {
  return (JSON.parse(readFileSync(join(node.dir, "volume-id"), "utf8")) as { uuid: string }).uuid;
}

/** Three replicating brokers with their volume ids published, as the operator records them. */
async function replicatingCluster(opts: { lagMs?: number } = {}): Promise<TestCluster> {
  const tc = clusters.create({
    prefix: "narad-repl",
    args: ["--replication", "on", "--replica-lag-ms", String(opts.lagMs ?? 10_000)],
  });
  await tc.startAll(["a", "b", "c"]);
  for (const n of tc.nodes()) tc.mc.setVolumeId(n.id, volumeIdOf(n));
  return tc;
}

async function createTopic(tc: TestCluster, name: string, body: object = {}): Promise<ReplicaAssignment> {
  const r = await req(tc.node("a"), "POST", "/v1/topics", {
    name,
    partitions: 1,
    replication_factor: 3,
    ...body,
  });
  expect(r.status, r.text).toBe(201);
  const record = tc.mc.replicaAssignment(name, 0);
  if (record === undefined) throw new Error("no replicated record");
  return record;
}

/** Produces ids with acks=all through `node`; returns the offsets the 200 answered. */
async function produceAll(node: TestNode, topic: string, ids: number[]) {
  const body = ids.map((id) => JSON.stringify({ key: `k${id}`, partition: 0, payload: { id } })).join("\n");
  return req(node, "POST", `/v1/topics/${topic}/produce-batch?acks=all`, body, {
    "content-type": "application/x-ndjson",
  });
}

async function readIds(node: TestNode, topic: string): Promise<number[]> {
  const r = await req(node, "GET", `/v1/topics/${topic}/records?partition=0&offset=0&limit=1000`);
  expect(r.status, r.text).toBe(200);
  return (r.json().records as Array<{ payload: { id: number } }>).map((x) => x.payload.id);
}

/** A partition directory's segment bytes, concatenated in offset order. */
async function segmentBytes(node: TestNode, topic: string): Promise<Buffer> {
  const dir = join(node.dir, "topics", topic, "p00000");
  const names = (await readdir(dir)).filter((n) => n.endsWith(".log")).sort();
  return Buffer.concat(await Promise.all(names.map((n) => readFile(join(dir, n)))));
}

describe("replication on an in-process cluster", () => {
  it("an acks=all record is answered once it is on every in-sync replica; the copies are byte-identical", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "orders");
    expect(record.replicas).toHaveLength(3);
    expect(record.isr).toHaveLength(3);
    const leader = tc.node(record.leader!);
    const others = tc.nodes().filter((n) => n.id !== leader.id);

    const first = await produceAll(others[0]!, "orders", [1, 2, 3]);
    expect(first.status, first.text).toBe(200);
    expect(first.json().results.map((r: { offset: number }) => r.offset)).toEqual([0, 1, 2]);
    for (let i = 0; i < 10; i++) {
      const r = await produceAll(tc.nodes()[i % 3]!, "orders", [10 * i + 4, 10 * i + 5]);
      expect(r.status, r.text).toBe(200);
    }
    await eventually("every WAL drained", 10_000, () => drained(tc.nodes()));
    const ids = await readIds(others[1]!, "orders");
    expect(ids).toHaveLength(23);
    expect(new Set(ids).size).toBe(23);

    // Followers hold the same frames, byte for byte, as soon as they fetched them.
    const want = await segmentBytes(leader, "orders");
    await eventually("followers caught up", 10_000, async () => {
      for (const n of others) if (!(await segmentBytes(n, "orders")).equals(want)) return false;
      return true;
    });
    expect(tc.mc.replicaAssignment("orders", 0)?.isr).toHaveLength(3);
  });

  it("a Down leader is replaced from the ISR: nothing acknowledged is lost, produce resumes at the new leader", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "pay");
    const leaderId = record.leader!;
    const ids = Array.from({ length: 40 }, (_, i) => i);
    for (let i = 0; i < 40; i += 8) {
      const r = await produceAll(tc.nodes().find((n) => n.id !== leaderId)!, "pay", ids.slice(i, i + 8));
      expect(r.status, r.text).toBe(200);
    }
    await tc.kill(leaderId);
    tc.mc.setState(leaderId, "Down");
    // The operator's election: an in-sync replica leads at epoch + 1; the old leader leaves the ISR.
    const next = record.replicas.find((m) => m !== leaderId)!;
    tc.mc.setReplicaAssignment("pay", 0, {
      ...record,
      leader: next,
      leaderEpoch: record.leaderEpoch + 1,
      isr: record.isr.filter((m) => m.member !== leaderId),
    });
    const survivor = tc.node(next);
    // Meanwhile acks=wal produce is taken (202) and held for the new leader, never rerouted.
    const during = await produceIds(survivor, "pay", [100, 101], 0);
    expect(during.status).toBe(202);
    const after = await eventually("acks=all answered by the new leader", 15_000, async () => {
      const r = await produceAll(survivor, "pay", [200]);
      return r.status === 200;
    }).then(() => true);
    expect(after).toBe(true);
    await eventually("surviving WALs drained", 15_000, () =>
      drained(tc.nodes().filter((n) => n.id !== leaderId)),
    );
    const got = await readIds(survivor, "pay");
    for (const id of [...ids, 100, 101]) expect(got).toContain(id);
    expect(got.filter((id) => id === 200).length).toBeGreaterThanOrEqual(1);
  });

  it("acks=all is refused 503 not_enough_replicas when the recorded ISR is below min_insync_replicas", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "thin", { min_insync_replicas: 2 });
    tc.mc.setReplicaAssignment("thin", 0, {
      ...record,
      isr: record.isr.filter((m) => m.member === record.leader),
    });
    const r = await produceAll(tc.node("a"), "thin", [1]);
    expect(r.status, r.text).toBe(503);
    expect(r.json().code).toBe("not_enough_replicas");
    expect(r.headers["retry-after"]).toBeDefined();
  });
});
