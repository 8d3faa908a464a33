// Replication on an in-process cluster (ADR 0007): three brokers with real
// sockets and data dirs share one memory metastore; the test plays the
// operator (placement is the memory metastore's, elections are set by hand
// as operator/src/plan/election.ts would decide them). What runs for real:
// the replica manager's roles, the leader state's HWM and ISR writes, the
// fetchers, the commit wait, the dispatcher holding records for a leader.
import { readFileSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
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
  it("a dead follower leaves the ISR after replica_lag_ms (never below the minimum); back, it catches up and rejoins", async () => {
    const tc = await replicatingCluster({ lagMs: 800 });
    const record = await createTopic(tc, "lag");
    const leader = tc.node(record.leader!);
    const victim = record.replicas.find((m) => m !== leader.id)!;
    expect((await produceAll(leader, "lag", [1, 2])).status).toBe(200);
    await tc.kill(victim);
    // Answered once the ISR shrank to the two live replicas (min_insync_replicas 2).
    const t0 = Date.now();
    const r = await produceAll(leader, "lag", [3, 4]);
    expect(r.status, r.text).toBe(200);
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(
      tc.mc
        .replicaAssignment("lag", 0)
        ?.isr.map((m) => m.member)
        .sort(),
    ).toEqual(record.replicas.filter((m) => m !== victim).sort());
    for (let i = 0; i < 5; i++) expect((await produceAll(leader, "lag", [10 + i])).status).toBe(200);
    // The survivors alone cannot shrink it further: a second death stops acks=all (503), loses nothing.
    const back = await tc.restart(victim);
    await eventually("the returning follower rejoined the ISR", 15_000, async () => {
      return (tc.mc.replicaAssignment("lag", 0)?.isr.length ?? 0) === 3;
    });
    const want = await segmentBytes(leader, "lag");
    await eventually("its copy equals the leader's", 10_000, async () =>
      (await segmentBytes(back, "lag")).equals(want),
    );
  });

  it("a deposed leader truncates what it appended above the HWM, and its WAL re-sends it to the new leader once", async () => {
    const tc = await replicatingCluster({ lagMs: 60_000 });
    const record = await createTopic(tc, "div");
    const oldId = record.leader!;
    const [b, c] = record.replicas.filter((m) => m !== oldId) as [string, string];
    expect((await produceAll(tc.node(b), "div", [1, 2, 3])).status).toBe(200);
    await eventually("drained", 10_000, () => drained(tc.nodes()));
    // Both followers die: the leader appends what its own WAL sends it, but cannot commit it.
    await tc.kill(b);
    await tc.kill(c);
    const held = await produceIds(tc.node(oldId), "div", [50, 51, 52], 0);
    expect(held.status).toBe(202);
    await eventually("the leader appended above its HWM", 10_000, async () => {
      const st = (await req(tc.node(oldId), "GET", "/v1/topics/div?partition=0")).json().partition_stats[0];
      return st.next_offset > st.high_watermark;
    });
    const leaderEnd = (await segmentBytes(tc.node(oldId), "div")).length;
    await tc.kill(oldId);
    tc.mc.setState(oldId, "Down");
    // The operator elects b at epoch + 1 (the old leader stays in the ISR: removing it would go below 2).
    await tc.restart(b);
    await tc.restart(c);
    tc.mc.setReplicaAssignment("div", 0, { ...record, leader: b, leaderEpoch: record.leaderEpoch + 1 });
    expect((await produceAll(tc.node(c), "div", [60])).status).toBe(503);
    // The old leader returns: it follows b, cuts its divergent tail, rejoins; its WAL re-sends 50-52.
    const old = await tc.restart(oldId);
    tc.mc.setState(oldId, "Active");
    await eventually("every WAL drained", 20_000, () => drained(tc.nodes()));
    const r = await produceAll(tc.node(c), "div", [61]);
    expect(r.status, r.text).toBe(200);
    const ids = await readIds(tc.node(b), "div");
    for (const id of [1, 2, 3, 50, 51, 52, 61]) expect(ids.filter((x) => x === id)).toHaveLength(1);
    const want = await segmentBytes(tc.node(b), "div");
    await eventually(
      "all three copies equal",
      10_000,
      async () =>
        (await segmentBytes(old, "div")).equals(want) && (await segmentBytes(tc.node(c), "div")).equals(want),
    );
    expect(leaderEnd).toBeGreaterThan(0);
  });

  it("a follower back on an empty volume is removed from the ISR at its first fetch, then catches up and rejoins with its new volume", async () => {
    const tc = await replicatingCluster({ lagMs: 60_000 });
    const record = await createTopic(tc, "vol");
    const leader = tc.node(record.leader!);
    const victimId = record.replicas.find((m) => m !== leader.id)!;
    for (let i = 0; i < 5; i++)
      expect((await produceAll(leader, "vol", [i * 2, i * 2 + 1])).status).toBe(200);
    const victim = await tc.kill(victimId);
    await rm(victim.dir, { recursive: true, force: true });
    const fresh = await tc.start(victimId, { dir: tc.tempDir("narad-repl-fresh") });
    const newVolume = volumeIdOf(fresh);
    expect(newVolume).not.toBe(record.isr.find((m) => m.member === victimId)?.volumeId);
    tc.mc.setVolumeId(victimId, newVolume);
    await eventually("rejoined with its new volume", 15_000, async () => {
      const isr = tc.mc.replicaAssignment("vol", 0)?.isr ?? [];
      return isr.some((m) => m.member === victimId && m.volumeId === newVolume);
    });
    const want = await segmentBytes(leader, "vol");
    expect((await segmentBytes(fresh, "vol")).equals(want)).toBe(true);
    expect((await produceAll(fresh, "vol", [99])).status).toBe(200);
  });

  it("a consumer group's committed frontier survives the leader's loss (acked records are not redelivered)", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "q");
    const leaderId = record.leader!;
    const via = tc.node(record.replicas.find((m) => m !== leaderId)!);
    expect((await produceAll(via, "q", [1, 2, 3, 4, 5, 6])).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      const got = await req(via, "GET", "/v1/topics/q/consume?group=g&wait=1s");
      expect(got.status, got.text).toBe(200);
      const handle = got.json().receipt_handle as string;
      const ack = await req(via, "POST", `/v1/topics/q/ack?receipt_handle=${encodeURIComponent(handle)}`);
      expect(ack.status, ack.text).toBe(204);
    }
    // The leader persists the frontier (4) and sends it to its followers with their next fetch.
    await eventually("followers hold the frontier", 15_000, async () => {
      for (const m of record.replicas.filter((x) => x !== leaderId)) {
        const f = join(tc.node(m).dir, "topics", "q", "p00000", "consumers", "g.offset");
        const buf = await readFile(f).catch(() => null);
        if (buf === null || buf.readUInt32BE(4) !== 4) return false;
      }
      return true;
    });
    await tc.kill(leaderId);
    tc.mc.setState(leaderId, "Down");
    tc.mc.setReplicaAssignment("q", 0, {
      ...record,
      leader: via.id,
      leaderEpoch: record.leaderEpoch + 1,
      isr: record.isr.filter((m) => m.member !== leaderId),
    });
    const got = await eventually("the new leader serves the group", 10_000, async () => {
      const r = await req(via, "GET", "/v1/topics/q/consume?group=g&wait=1s");
      return r.status === 200;
    }).then(async () => req(via, "GET", "/v1/topics/q/consume?group=g&wait=1s"));
    // The first consume above took offset 4 (id 5); this one gets id 6, or 5 again: never 1-4.
    expect(got.status, got.text).toBe(200);
    expect([5, 6]).toContain(got.json().payload.id);
  });

  it("a follower back on an empty volume gets the group frontiers again, also ones that no longer change", async () => {
    const tc = await replicatingCluster({ lagMs: 60_000 });
    const record = await createTopic(tc, "qv");
    const leaderId = record.leader!;
    const leader = tc.node(leaderId);
    const victimId = record.replicas.find((m) => m !== leaderId)!;
    const frontierOf = async (node: TestNode) => {
      const buf = await readFile(join(node.dir, "topics", "qv", "p00000", "consumers", "g.offset")).catch(
        () => null,
      );
      return buf === null ? undefined : Number(buf.readBigUInt64BE(0));
    };
    expect((await produceAll(leader, "qv", [1, 2, 3, 4, 5, 6])).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      const got = await req(leader, "GET", "/v1/topics/qv/consume?group=g&wait=1s");
      expect(got.status, got.text).toBe(200);
      const ack = await req(
        leader,
        "POST",
        `/v1/topics/qv/ack?receipt_handle=${encodeURIComponent(got.json().receipt_handle as string)}`,
      );
      expect(ack.status, ack.text).toBe(204);
    }
    await eventually(
      "the follower holds the frontier",
      15_000,
      async () => (await frontierOf(tc.node(victimId))) === 4,
    );
    // The follower's volume is lost; nobody consumes any more, so the frontier stays at 4.
    const victim = await tc.kill(victimId);
    await rm(victim.dir, { recursive: true, force: true });
    const fresh = await tc.start(victimId, { dir: tc.tempDir("narad-repl-fresh") });
    tc.mc.setVolumeId(victimId, volumeIdOf(fresh));
    await eventually("rejoined with its new volume", 15_000, async () =>
      (tc.mc.replicaAssignment("qv", 0)?.isr ?? []).some(
        (m) => m.member === victimId && m.volumeId === volumeIdOf(fresh),
      ),
    );
    // Its copy of the frontier comes back although the frontier did not move.
    await eventually(
      "the emptied follower holds the frontier again",
      10_000,
      async () => (await frontierOf(fresh)) === 4,
    );
  });

  it("reassignment: an added replica catches up and joins the ISR; a dropped one deletes its copy", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "move");
    const leader = tc.node(record.leader!);
    for (let i = 0; i < 6; i++)
      expect((await produceAll(leader, "move", [i * 3, i * 3 + 1, i * 3 + 2])).status).toBe(200);
    const d = await tc.start("d");
    tc.mc.setVolumeId("d", volumeIdOf(d));
    // The operator adds d first ...
    tc.mc.setReplicaAssignment("move", 0, { ...record, replicas: [...record.replicas, "d"] });
    await eventually("d in the ISR", 15_000, async () =>
      (tc.mc.replicaAssignment("move", 0)?.isr ?? []).some((m) => m.member === "d"),
    );
    expect((await segmentBytes(d, "move")).equals(await segmentBytes(leader, "move"))).toBe(true);
    // ... then drops a follower from the replicas and the ISR.
    const gone = record.replicas.find((m) => m !== leader.id)!;
    const now = tc.mc.replicaAssignment("move", 0)!;
    tc.mc.setReplicaAssignment("move", 0, {
      ...now,
      replicas: now.replicas.filter((m) => m !== gone),
      isr: now.isr.filter((m) => m.member !== gone),
    });
    const goneDir = join(tc.node(gone).dir, "topics", "move", "p00000");
    await eventually("the dropped replica's copy is removed", 10_000, async () =>
      readdir(goneDir).then(
        () => false,
        () => true,
      ),
    );
    expect((await produceAll(d, "move", [100])).status).toBe(200);
  });
});
