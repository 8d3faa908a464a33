// Replication on an in-process cluster (ADR 0007): three brokers with real
// sockets and data dirs share one memory metastore; the test plays the
// operator (placement is the memory metastore's, elections are set by hand
// as operator/src/plan/election.ts would decide them). What runs for real:
// the replica manager's roles, the leader state's HWM and ISR writes, the
// fetchers, the commit wait, the dispatcher holding records for a leader.
import { readFileSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../packages/api/src/v1alpha1/replication.ts";
import { scanFrames } from "../src/replication-io/replica-log.ts";
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
async function replicatingCluster(
  opts: { lagMs?: number; commitTimeoutMs?: number; acksAllTimeoutMs?: number } = {},
): Promise<TestCluster> {
  const tc = clusters.create({
    prefix: "narad-repl",
    args: [
      ...["--replication", "on", "--replica-lag-ms", String(opts.lagMs ?? 10_000)],
      ...["--replica-commit-timeout-ms", String(opts.commitTimeoutMs ?? 10_000)],
      ...(opts.acksAllTimeoutMs === undefined
        ? []
        : ["--acks-all-timeout-ms", String(opts.acksAllTimeoutMs)]),
    ],
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
    const tc = await replicatingCluster({ lagMs: 60_000, commitTimeoutMs: 2_000, acksAllTimeoutMs: 3_000 });
    const record = await createTopic(tc, "div");
    const oldId = record.leader!;
    const [b, c] = record.replicas.filter((m) => m !== oldId) as [string, string];
    expect((await produceAll(tc.node(b), "div", [1, 2, 3])).status).toBe(200);
    await eventually("drained", 10_000, () => drained(tc.nodes()));
    // Both followers die: the leader appends what its own WAL sends it, but cannot commit it.
    await tc.kill(b);
    await tc.kill(c);
    // acks=wal: answered once in the leader's WAL (the default, auto, is acks=all on a replicated topic).
    const held = await req(
      tc.node(oldId),
      "POST",
      "/v1/topics/div/produce-batch?acks=wal",
      [50, 51, 52].map((id) => JSON.stringify({ key: `k${id}`, partition: 0, payload: { id } })).join("\n"),
      { "content-type": "application/x-ndjson" },
    );
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

  it("an ISR change the leader decided before the operator dropped a replica never puts the dropped replica back", async () => {
    // The leader's ISR writes go through a gate the test opens: the write is
    // decided on the record before the operator's change and lands after it,
    // as a compare-and-swap that conflicted and was retried on a fresh read.
    let hold: Promise<void> | undefined;
    let release = (): void => {};
    const held: string[] = [];
    const tc = clusters.create({
      prefix: "narad-repl",
      args: ["--replication", "on", "--replica-lag-ms", "800"],
      metastore: (_id, view) => ({
        ...view,
        recordIsr: async (topic, partition, expect, isr) => {
          if (hold !== undefined) {
            held.push(isr.map((m) => m.member).join(","));
            await hold;
          }
          return view.recordIsr!(topic, partition, expect, isr);
        },
      }),
    });
    await tc.startAll(["a", "b", "c", "d"]);
    for (const n of tc.nodes()) tc.mc.setVolumeId(n.id, volumeIdOf(n));
    const record = await createTopic(tc, "drop");
    const leader = tc.node(record.leader!);
    const [x, y] = record.replicas.filter((m) => m !== leader.id) as [string, string];
    const spare = tc.nodes().find((n) => !record.replicas.includes(n.id))!.id;
    expect((await produceAll(leader, "drop", [1, 2, 3])).status).toBe(200);
    // The operator adds a replacement for x; the leader adds it to the ISR once caught up.
    tc.mc.setReplicaAssignment("drop", 0, { ...record, replicas: [...record.replicas, spare] });
    await eventually("the replacement in the ISR", 15_000, async () =>
      (tc.mc.replicaAssignment("drop", 0)?.isr ?? []).some((m) => m.member === spare),
    );
    // y stops: the leader decides to shrink it away, on the record that still lists x.
    hold = new Promise<void>((r) => {
      release = r;
    });
    await tc.kill(y);
    await eventually("the leader asked to shrink y", 15_000, async () => held.length > 0);
    expect(held[0]!.split(",")).not.toContain(y);
    expect(held[0]!.split(",")).toContain(x);
    // Meanwhile the operator drops x from the replicas and the ISR (its replacement is in sync).
    const now = tc.mc.replicaAssignment("drop", 0)!;
    tc.mc.setReplicaAssignment("drop", 0, {
      ...now,
      replicas: now.replicas.filter((m) => m !== x),
      isr: now.isr.filter((m) => m.member !== x),
    });
    await eventually("x removed its copy", 10_000, async () =>
      readdir(join(tc.node(x).dir, "topics", "drop", "p00000")).then(
        () => false,
        () => true,
      ),
    );
    hold = undefined;
    release();
    // Whatever the leader does with its change, the ISR never again names x:
    // x holds no copy, yet an ISR entry makes it electable and counted.
    const deadline = Date.now() + 4_000;
    while (Date.now() < deadline) {
      const r = tc.mc.replicaAssignment("drop", 0)!;
      for (const m of r.isr) expect(r.replicas, `ISR ${JSON.stringify(r.isr)}`).toContain(m.member);
      await new Promise((res) => setTimeout(res, 50));
    }
    // The leader decided again on the operator's record: y (dead) leaves, the two live stay.
    await eventually("the ISR is the two live replicas", 10_000, async () => {
      const isr = (tc.mc.replicaAssignment("drop", 0)?.isr ?? []).map((m) => m.member).sort();
      return JSON.stringify(isr) === JSON.stringify([leader.id, spare].sort());
    });
    expect((await produceAll(leader, "drop", [4])).status).toBe(200);
  });

  it("a leader back after a kill -9 in its own epoch adds a follower to the ISR only once it holds everything the leader may have acknowledged", async () => {
    // The leader's ISR writes after its restart are checked against the
    // joining follower's copy on disk at the moment of the write.
    const joins: Array<{ member: string; end: number }> = [];
    let watchJoin: { member: string; dir: string } | undefined;
    const copyEnd = async (dir: string): Promise<number> => {
      const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".log")).sort();
      if (names.length === 0) return 0;
      const buf = Buffer.concat(await Promise.all(names.map((n) => readFile(join(dir, n)))));
      const first = Number(names[0]!.slice(0, 20));
      const scan = scanFrames(buf, first, 1 << 24);
      const last = scan.frames.at(-1);
      return last === undefined ? first : last.baseOffset + last.count;
    };
    const tc = await replicatingCluster({ lagMs: 800 });
    const record = await createTopic(tc, "restart");
    const leaderId = record.leader!;
    const [f1, f2] = record.replicas.filter((m) => m !== leaderId) as [string, string];
    expect((await produceAll(tc.node(leaderId), "restart", [1, 2, 3])).status).toBe(200);
    const f2Dir = join((await tc.kill(f2)).dir, "topics", "restart", "p00000");
    await eventually("the ISR shrank to the two live replicas", 15_000, async () =>
      (tc.mc.replicaAssignment("restart", 0)?.isr ?? []).every((m) => m.member !== f2),
    );
    const acked = await produceAll(tc.node(leaderId), "restart", [4, 5, 6, 7, 8, 9]);
    expect(acked.status, acked.text).toBe(200);
    const ackedEnd = 1 + Math.max(...acked.json().results.map((r: { offset: number }) => r.offset));
    expect(ackedEnd).toBe(9);
    // kill -9 of the leader: its lazily written HWM file (and the replica
    // checkpoint) are what they were on disk at that instant, not what a
    // clean close would write.
    const dir = join(tc.node(leaderId).dir, "topics", "restart", "p00000");
    const onDisk = await Promise.all(["hwm", "replica-checkpoint"].map((f) => readFile(join(dir, f))));
    expect(onDisk[0]!.readUInt32BE(0) * 2 ** 32 + onDisk[0]!.readUInt32BE(4)).toBeLessThan(ackedEnd);
    await tc.kill(leaderId);
    await Promise.all(["hwm", "replica-checkpoint"].map((f, i) => writeFile(join(dir, f), onDisk[i]!)));
    // f1, the other in-sync replica, is slow to come back (stopped meanwhile).
    await tc.kill(f1);
    // Back within the grace: still the leader at the same epoch.
    await tc.restart(leaderId, {
      metastore: (_id, view) => ({
        ...view,
        recordIsr: async (topic, partition, expect_, isr) => {
          const w = watchJoin;
          if (w !== undefined && isr.some((m) => m.member === w.member))
            joins.push({ member: w.member, end: await copyEnd(w.dir) });
          return view.recordIsr!(topic, partition, expect_, isr);
        },
      }),
    });
    watchJoin = { member: f2, dir: f2Dir };
    await tc.restart(f2);
    await eventually("f2 back in the ISR", 15_000, async () =>
      (tc.mc.replicaAssignment("restart", 0)?.isr ?? []).some((m) => m.member === f2),
    );
    expect(joins.length).toBeGreaterThan(0);
    // Everything acknowledged (offsets below 9) was on f2 when it was added:
    // an ISR member is electable, and the records it lacks would be lost.
    for (const j of joins) expect(j.end, JSON.stringify(joins)).toBeGreaterThanOrEqual(ackedEnd);
    await tc.restart(f1);
    expect((await produceAll(tc.node(leaderId), "restart", [10])).status).toBe(200);
    const ids = await readIds(tc.node(leaderId), "restart");
    for (const id of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) expect(ids).toContain(id);
  });

  it("a deposed leader whose view still names it leader acknowledges nothing the new leader lacks", async () => {
    // The old leader's metastore view is frozen (a watch that stopped
    // delivering) while the operator hands leadership to another replica.
    let frozen: { at: Map<string, ReplicaAssignment | undefined>; listeners: Array<() => void> } | undefined;
    const tc = clusters.create({
      prefix: "narad-repl",
      args: [
        ...["--replication", "on", "--replica-lag-ms", "1500"],
        ...["--replica-commit-timeout-ms", "1500", "--acks-all-timeout-ms", "2500"],
      ],
    });
    await tc.startAll(["a", "b", "c"]);
    for (const n of tc.nodes()) tc.mc.setVolumeId(n.id, volumeIdOf(n));
    const record = await createTopic(tc, "zombie");
    const oldId = record.leader!;
    const [next, third] = record.replicas.filter((m) => m !== oldId) as [string, string];
    expect((await produceAll(tc.node(next), "zombie", [1, 2, 3])).status).toBe(200);
    await eventually("drained", 10_000, () => drained(tc.nodes()));
    // The old leader again, with a view the test can freeze.
    await tc.restart(oldId, {
      metastore: (_id, view) => ({
        ...view,
        replicaAssignment: (t, p) =>
          frozen?.at.has(`${t}/${p}`) === true ? frozen.at.get(`${t}/${p}`) : view.replicaAssignment?.(t, p),
        ownerOf: (t, p) => {
          const r = frozen?.at.get(`${t}/${p}`);
          return r !== undefined ? (r.leader ?? "") : view.ownerOf(t, p);
        },
        onChange: (l) => {
          view.onChange(() => {
            if (frozen !== undefined) frozen.listeners.push(l);
            else l();
          });
        },
      }),
    });
    await eventually(
      "the old leader leads again",
      10_000,
      async () => (await produceAll(tc.node(oldId), "zombie", [4])).status === 200,
    );
    frozen = { at: new Map([["zombie/0", tc.mc.replicaAssignment("zombie", 0)]]), listeners: [] };
    // Handover: `next` leads at epoch + 1; the ISR is unchanged (the old leader stays in it,
    // and leaves it after replica_lag_ms: it never fetches from `next`).
    const now = tc.mc.replicaAssignment("zombie", 0)!;
    tc.mc.setReplicaAssignment("zombie", 0, { ...now, leader: next, leaderEpoch: now.leaderEpoch + 1 });
    // Produce through the deposed leader (it commits locally, as its view says)
    // and through the new one, at the same time.
    const [viaOld, viaNew] = await Promise.all([
      produceAll(tc.node(oldId), "zombie", [100, 101]),
      eventually(
        "the new leader answers",
        15_000,
        async () => (await produceAll(tc.node(third), "zombie", [200])).status === 200,
      ),
    ]);
    expect(viaOld.status, viaOld.text).not.toBe(200);
    expect(viaNew).toBeUndefined();
    // The old leader sees the record: it follows, cuts its tail, re-sends 100-101 once.
    const listeners = frozen.listeners;
    frozen = undefined;
    for (const l of listeners) l();
    await eventually("every WAL drained", 20_000, () => drained(tc.nodes()));
    const ids = await readIds(tc.node(next), "zombie");
    for (const id of [1, 2, 3, 4, 100, 101]) expect(ids.filter((x) => x === id)).toHaveLength(1);
    expect(ids).toContain(200);
    const want = await segmentBytes(tc.node(next), "zombie");
    await eventually("the old leader's copy equals the new leader's", 10_000, async () =>
      (await segmentBytes(tc.node(oldId), "zombie")).equals(want),
    );
  });

  for (const fault of ["lost", "applied"] as const)
    it(`an ISR shrink whose answer is ${fault} stays pending: nothing is acknowledged on the shrunk set until the change is known`, async () => {
      const tc = await replicatingCluster({ lagMs: 800, commitTimeoutMs: 2_000, acksAllTimeoutMs: 3_000 });
      const record = await createTopic(tc, `pend-${fault}`, { min_insync_replicas: 2 });
      const topic = `pend-${fault}`;
      const leader = tc.node(record.leader!);
      const [f1, f2] = record.replicas.filter((m) => m !== leader.id) as [string, string];
      expect((await produceAll(leader, topic, [1])).status).toBe(200);
      // Three answers are lost; f2 and f1 die, one after the other.
      tc.mc.failIsrWrites(fault, 3);
      const writesBefore = tc.mc.isrWrites();
      await tc.kill(f2);
      const t0 = Date.now();
      const r = await produceAll(leader, topic, [2]);
      expect(r.status, r.text).toBe(200);
      // Answered only once the shrink was recorded (applied) or re-sent and recorded (lost).
      const isr = tc.mc
        .replicaAssignment(topic, 0)!
        .isr.map((m) => m.member)
        .sort();
      expect(isr).toEqual([leader.id, f1].sort());
      expect(tc.mc.isrWrites()).toBeGreaterThan(writesBefore);
      console.log(`ISR shrink with the answer ${fault} x3: acks=all answered after ${Date.now() - t0} ms`);
      // With f1 gone too the ISR cannot shrink below 2: acks=all waits, then 503; nothing on one copy.
      await tc.kill(f1);
      const alone = await produceAll(leader, topic, [3]);
      expect(alone.status).toBe(503);
      expect(tc.mc.replicaAssignment(topic, 0)!.isr).toHaveLength(2);
    });

  it("a fan-out cursor survives the parent leader's loss: the new leader copies on from it, not from the attach", async () => {
    const tc = await replicatingCluster();
    const record = await createTopic(tc, "parent");
    const leaderId = record.leader!;
    const via = tc.node(record.replicas.find((m) => m !== leaderId)!);
    await createTopic(tc, "kid");
    const child = await req(via, "POST", "/v1/topics/parent/children", { child: "kid" });
    expect(child.status, child.text).toBe(200);
    const ids = Array.from({ length: 50 }, (_, i) => i);
    for (let i = 0; i < 50; i += 10)
      expect((await produceAll(via, "parent", ids.slice(i, i + 10))).status).toBe(200);
    const childIds = async () => {
      const out: number[] = [];
      const t = (await req(via, "GET", "/v1/topics/kid")).json();
      for (let p = 0; p < t.partitions; p++) {
        const r = await req(via, "GET", `/v1/topics/kid/records?partition=${p}&offset=0&limit=1000`);
        if (r.status === 200)
          for (const x of r.json().records as Array<{ payload: { id: number } }>) out.push(x.payload.id);
      }
      return out;
    };
    await eventually("the child got the 50", 15_000, async () => (await childIds()).length >= 50);
    // The cursor reached the followers of the parent partition.
    await eventually("followers hold the cursor", 15_000, async () => {
      for (const m of record.replicas.filter((x) => x !== leaderId)) {
        const dir = join(tc.node(m).dir, "topics", "parent", "p00000");
        const names = await readdir(dir).catch(() => [] as string[]);
        const f = names.find((n) => n.startsWith("fanout-") && n.endsWith(".offset"));
        if (f === undefined) return false;
        if ((JSON.parse(await readFile(join(dir, f), "utf8")) as { next_offset: number }).next_offset < 50)
          return false;
      }
      return true;
    });
    await tc.kill(leaderId);
    tc.mc.setState(leaderId, "Down");
    tc.mc.setReplicaAssignment("parent", 0, {
      ...record,
      leader: via.id,
      leaderEpoch: record.leaderEpoch + 1,
      isr: record.isr.filter((m) => m.member !== leaderId),
    });
    await eventually(
      "acks=all at the new leader",
      15_000,
      async () => (await produceAll(via, "parent", [100])).status === 200,
    );
    await eventually("the child got 100", 15_000, async () => (await childIds()).includes(100));
    const got = await childIds();
    // Copied on from the replicated cursor: none of the first 50 again.
    for (const id of ids) expect(got.filter((x) => x === id)).toHaveLength(1);
  });

  it("a deleted replicated topic's directory is not recreated by a fetcher; a namesake replicates afresh", async () => {
    const tc = await replicatingCluster();
    await createTopic(tc, "gone");
    for (let i = 0; i < 5; i++) expect((await produceAll(tc.node("a"), "gone", [i])).status).toBe(200);
    const del = await req(tc.node("b"), "DELETE", "/v1/topics/gone");
    expect(del.status, del.text).toBe(204);
    // Every node deletes its files (the operator's delete-data step, done here by the test).
    for (const n of tc.nodes()) {
      const r = await req(n, "DELETE", "/admin/v1/topics/gone/data");
      expect([200, 204, 404]).toContain(r.status);
    }
    await new Promise((r) => setTimeout(r, 1_500));
    for (const n of tc.nodes())
      expect(
        await readdir(join(n.dir, "topics", "gone")).then(
          () => "exists",
          () => "absent",
        ),
      ).toBe("absent");
    await createTopic(tc, "gone");
    expect((await produceAll(tc.node("c"), "gone", [100])).status).toBe(200);
    expect(await readIds(tc.node("a"), "gone")).toEqual([100]);
  });

  it("a produce that names no acks is acks=all on a replicated topic (--default-acks auto) and still answers Narad's 202", async () => {
    const tc = await replicatingCluster();
    await createTopic(tc, "implicit");
    const r = await req(tc.node("b"), "POST", "/v1/topics/implicit/produce?partition=0", '{"id":1}');
    expect(r.status, r.text).toBe(202);
    expect(r.text).toBe("");
    // Answered only once committed on the ISR: readable at once, through any node.
    expect(await readIds(tc.node("c"), "implicit")).toEqual([1]);
    const batch = await produceIds(tc.node("a"), "implicit", [2, 3], 0);
    expect(batch.status, batch.text).toBe(202);
    expect(batch.json()).toEqual({ accepted: 2 });
    expect(await readIds(tc.node("b"), "implicit")).toEqual([1, 2, 3]);
    // With the ISR below its minimum the refusal comes up front, as for an explicit acks=all.
    const record = tc.mc.replicaAssignment("implicit", 0)!;
    tc.mc.setReplicaAssignment("implicit", 0, {
      ...record,
      isr: record.isr.filter((m) => m.member === record.leader),
    });
    const refused = await req(tc.node("b"), "POST", "/v1/topics/implicit/produce?partition=0", '{"id":4}');
    expect(refused.status).toBe(503);
    expect(refused.json().code).toBe("not_enough_replicas");
    // An explicit acks=wal keeps the single-copy 202 of the WAL fsync.
    const wal = await req(
      tc.node("b"),
      "POST",
      "/v1/topics/implicit/produce?partition=0&acks=wal",
      '{"id":5}',
    );
    expect(wal.status).toBe(202);
  });
});
