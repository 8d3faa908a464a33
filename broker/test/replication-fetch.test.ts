// The first data-path step of replication (ADR 0007) on real sockets and a
// real follower process: two in-process brokers on 127.0.0.1 (the cluster
// harness) serve ReplicaFetch and OffsetForLeaderEpoch on their cluster
// RPC; the follower is the fetcher running as its own process
// (harness/replica-follower.ts), replicating a partition into its own
// directory. Checked: a byte-identical, CRC-valid copy with no duplicate
// frame through kill -9s mid catch-up; fencing and the other refusals; the
// long poll; truncation of a divergent tail from an old epoch, and the
// refusal to truncate below the known HWM.

import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { clusterRpcToken } from "../src/auth/cluster-secret.ts";
import { encodeFrame } from "../src/core/log-codec.ts";
import { ReplicaLog, scanFrames } from "../src/replication-io/replica-log.ts";
import {
  appendEpoch,
  readCheckpoint,
  readEpochFile,
  writeCheckpoint,
} from "../src/replication-io/replica-state-files.ts";
import { clusterAuthClientInterceptor } from "../src/rpc/auth.ts";
import { repoRoot } from "./harness/process.ts";
import type { FollowerArgs } from "./harness/replica-follower.ts";
import {
  eventually,
  hwm,
  produceIds,
  req,
  type TestCluster,
  type TestNode,
  testClusters,
  testPeerPool,
} from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, { prefix: "narad-repl" });
const pools: Array<ReturnType<typeof testPeerPool>> = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const p of pools.splice(0)) p.close();
});

const topic = "r";

/** Two brokers and a one-partition topic; returns the owner (leader) and the other node. */
async function setup(tc: TestCluster): Promise<{ leader: TestNode; other: TestNode }> {
  const [a, b] = await tc.startAll(["a", "b"]);
  const r = await req(a!, "POST", "/v1/topics", { name: topic, partitions: 1 });
  expect(r.status, r.text).toBe(201);
  const owner = tc.mc.owners(topic)[0];
  return owner === "a" ? { leader: a!, other: b! } : { leader: b!, other: a! };
}

/** Produces ids [from, to) to partition 0 in batches of `batch` (one frame each, roughly). */
async function produceRange(node: TestNode, from: number, to: number, batch = 10): Promise<void> {
  for (let i = from; i < to; i += batch) {
    const ids = Array.from({ length: Math.min(batch, to - i) }, (_, j) => i + j);
    const r = await produceIds(node, topic, ids, 0, "x".repeat(100));
    expect(r.status, r.text).toBe(202);
  }
  await eventually(`hwm reaches ${to}`, 30_000, async () => (await hwm(node, topic, 0)) === to);
}

const leaderDir = (n: TestNode): string => join(n.dir, "topics", topic, "p00000");

/** Concatenation of a partition dir's segment files, oldest first. */
async function frameStream(dir: string): Promise<Buffer> {
  const names = (await readdir(dir)).filter((n) => /^\d{20}\.log$/.test(n)).sort();
  return Buffer.concat(await Promise.all(names.map((n) => readFile(join(dir, n)))));
}

interface FollowerRun {
  child: ChildProcess;
  events: Array<Record<string, unknown>>;
  exited: Promise<void>;
  waitFor(pred: (e: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>>;
}

function startFollower(args: FollowerArgs): FollowerRun {
  const child = spawn(
    process.execPath,
    [join(repoRoot, "broker/test/harness/replica-follower.ts"), JSON.stringify(args)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  const events: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  let buf = "";
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split("\n");
    buf = lines.pop()!;
    for (const l of lines) events.push(JSON.parse(l) as Record<string, unknown>);
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    child,
    events,
    exited,
    async waitFor(pred, what) {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const hit = events.find(pred);
        if (hit !== undefined) return hit;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`follower exited before ${what}: ${JSON.stringify(events.slice(-3))}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
  };
}

function followerArgs(leader: TestNode, dir: string, over: Partial<FollowerArgs> = {}): FollowerArgs {
  return {
    leader: leader.clusterAddress,
    topic,
    partition: 0,
    dir,
    leaderEpoch: 0,
    maxBytes: 2_048,
    maxWaitMs: 500,
    segmentBytes: 16 * 1024,
    pauseMs: 0,
    ...over,
  };
}

/** The frames of `buf` are whole, CRC-valid and run from `from` to `to` with no offset twice. */
function expectCleanFrames(buf: Buffer, from: number, to: number): void {
  const scan = scanFrames(buf, from, 1 << 24);
  expect(scan.stop).toBeUndefined();
  expect(scan.validBytes).toBe(buf.length);
  const last = scan.frames.at(-1)!;
  expect(last.baseOffset + last.count).toBe(to);
}

describe("replica fetch on the cluster RPC", () => {
  it("replicates a partition byte for byte through kill -9s of the follower mid catch-up, resuming from its checkpoint", async () => {
    const tc = clusters.create();
    const { leader } = await setup(tc);
    const n = 400;
    await produceRange(leader, 0, n);
    const copy = join(tc.tempDir("narad-repl-copy"), "p00000");
    const ends: number[] = [];
    // Three lives killed part-way, then one that finishes.
    for (let life = 0; life < 3; life++) {
      const f = startFollower(followerArgs(leader, copy, { pauseMs: 40 }));
      const seen = await f.waitFor(
        (e) => e.event === "progress" && (e.logEnd as number) > (ends.at(-1) ?? 0),
        `progress in life ${life}`,
      );
      f.child.kill("SIGKILL");
      await f.exited;
      const cp = await readCheckpoint(copy);
      expect(cp.ok).toBe(true);
      const reopened = await ReplicaLog.open({ dir: copy, segmentBytes: 16 * 1024, maxFrameBytes: 1 << 24 });
      // The copy is at least what was reported and never ahead of the leader.
      expect(reopened.endOffset).toBeGreaterThanOrEqual(seen.logEnd as number);
      expect(reopened.endOffset).toBeLessThanOrEqual(n);
      ends.push(reopened.endOffset);
    }
    expect(ends[0]).toBeLessThan(n); // the first kill did land mid catch-up
    const f = startFollower(followerArgs(leader, copy));
    await f.waitFor((e) => e.event === "progress" && e.logEnd === n, "caught up");
    f.child.kill("SIGTERM");
    const stop = await f.waitFor((e) => e.event === "stop", "clean stop");
    expect(stop).toMatchObject({ reason: "aborted", logEnd: n, hwm: n });

    const theirs = await frameStream(leaderDir(leader));
    const ours = await frameStream(copy);
    expect(ours.length).toBe(theirs.length);
    expect(ours.equals(theirs)).toBe(true);
    expectCleanFrames(ours, 0, n);
    const cp = await readCheckpoint(copy);
    expect(cp).toEqual({ ok: true, checkpoint: { leaderEpoch: 0, hwm: n } });
    const epochs = await readEpochFile(copy, n);
    expect(epochs).toEqual({ ok: true, history: [{ epoch: 0, startOffset: 0 }], dropped: 0 });
    console.log(
      `kill -9 lives ended at ${JSON.stringify(ends)} of ${n}; final copy ${ours.length} bytes, identical`,
    );
  });

  it("refuses fetches from another epoch, from a non-leader, out of range and for unknown topics; long-polls at the end", async () => {
    const tc = clusters.create();
    const { leader, other } = await setup(tc);
    await produceRange(leader, 0, 50);
    // The leader took over at epoch 2 at offset 50 (its leader-epochs file, as the wiring will write it).
    await appendEpoch(leaderDir(leader), 0, 0);
    await appendEpoch(leaderDir(leader), 2, 50);
    const pool = testPeerPool();
    pools.push(pool);
    const peer = pool.peer(leader.clusterAddress);
    const fetch = (o: {
      fetch_offset?: number;
      leader_epoch?: number;
      max_wait_ms?: number;
      topic?: string;
    }) =>
      peer.replicaFetch({
        topic: o.topic ?? topic,
        partition: 0,
        fetch_offset: o.fetch_offset ?? 0,
        leader_epoch: o.leader_epoch ?? 2,
        max_bytes: 1 << 20,
        max_wait_ms: o.max_wait_ms ?? 0,
        replica_id: "t",
        replica_volume_id: "",
      });

    const lower = await fetch({ leader_epoch: 1 });
    expect(lower).toMatchObject({ error: "fenced_leader_epoch", leader_epoch: 2 });
    expect(lower.frames.length).toBe(0);
    expect((await fetch({ leader_epoch: 3 })).error).toBe("unknown_leader_epoch");
    expect((await peer.offsetForLeaderEpoch({ topic, partition: 0, epoch: 0, leader_epoch: 1 })).error).toBe(
      "fenced_leader_epoch",
    );
    expect(await peer.offsetForLeaderEpoch({ topic, partition: 0, epoch: 1, leader_epoch: 2 })).toMatchObject(
      {
        error: "",
        epoch: 0,
        end_offset: 50,
      },
    );

    const ok = await fetch({});
    expect(ok).toMatchObject({ error: "", leader_epoch: 2, leader_hwm: 50, log_start_offset: 0 });
    expectCleanFrames(ok.frames, 0, 50);
    // Epoch 2 starts at 50, past these frames: the follower learns it with the first frame it writes.
    expect(ok.epoch_starts).toEqual([{ epoch: 0, start_offset: 0 }]);
    expect((await fetch({ fetch_offset: 51 })).error).toBe("offset_out_of_range");
    expect((await fetch({ fetch_offset: 1 })).error).toBe("offset_out_of_range"); // inside a frame
    expect((await fetch({ topic: "nope" })).error).toBe("unknown_topic");
    const notLeader = await pool.peer(other.clusterAddress).replicaFetch({
      topic,
      partition: 0,
      fetch_offset: 0,
      leader_epoch: 2,
      max_bytes: 1024,
      max_wait_ms: 0,
      replica_id: "t",
      replica_volume_id: "",
    });
    expect(notLeader.error).toBe("not_leader");

    // Long poll: nothing at the end answers empty after the wait...
    let t0 = performance.now();
    const empty = await fetch({ fetch_offset: 50, max_wait_ms: 300 });
    const emptyMs = performance.now() - t0;
    expect(empty.error).toBe("");
    expect(empty.frames.length).toBe(0);
    expect(emptyMs).toBeGreaterThanOrEqual(250);
    // ...and a record committed meanwhile answers at once, well before the wait ends.
    t0 = performance.now();
    const pending = fetch({ fetch_offset: 50, max_wait_ms: 10_000 });
    await new Promise((r) => setTimeout(r, 200));
    await produceRange(leader, 50, 51, 1);
    const woke = await pending;
    const wokeMs = performance.now() - t0;
    expect(woke.error).toBe("");
    expectCleanFrames(woke.frames, 50, 51);
    expect(woke.epoch_starts).toEqual([{ epoch: 2, start_offset: 50 }]);
    expect(wokeMs).toBeLessThan(5_000);
    console.log(
      `long poll: empty after ${emptyMs.toFixed(0)} ms (wait 300), woken after ${wokeMs.toFixed(0)} ms (wait 10000)`,
    );
  });

  it("a follower with a divergent tail from an old epoch truncates it at the new epoch and converges; it refuses to cut below its HWM", async () => {
    const tc = clusters.create();
    const { leader } = await setup(tc);
    await produceRange(leader, 0, 60);
    const copyRoot = tc.tempDir("narad-repl-div");
    const copy = join(copyRoot, "p00000");
    // Replicate the common prefix at epoch 0.
    let f = startFollower(followerArgs(leader, copy));
    await f.waitFor((e) => e.event === "progress" && e.logEnd === 60, "prefix replicated");
    f.child.kill("SIGTERM");
    await f.exited;
    // The follower had been a leader at epoch 1 and wrote records nobody else has (above its HWM 60).
    await appendEpoch(copy, 1, 60);
    const stale = await ReplicaLog.open({ dir: copy, segmentBytes: 16 * 1024, maxFrameBytes: 1 << 24 });
    const divergent = [0, 1, 2].map((i) => ({
      key: Buffer.from(`old${i}`),
      createdMs: 1,
      payload: Buffer.from(`divergent ${i}`),
      incarnation: "3333333333333333",
      seq: i + 1,
    }));
    await stale.append(encodeFrame(divergent, 60, 5));
    expect(stale.endOffset).toBe(63);
    // Meanwhile the real leader was elected at epoch 2 from offset 60 and took more records.
    await appendEpoch(leaderDir(leader), 0, 0);
    await appendEpoch(leaderDir(leader), 2, 60);
    await produceRange(leader, 60, 90);

    f = startFollower(followerArgs(leader, copy, { leaderEpoch: 2 }));
    const truncated = await f.waitFor((e) => e.event === "truncated", "truncation");
    expect(truncated).toMatchObject({ from: 63, to: 60 });
    await f.waitFor((e) => e.event === "progress" && e.logEnd === 90, "converged");
    f.child.kill("SIGTERM");
    await f.exited;
    const ours = await frameStream(copy);
    expect(ours.equals(await frameStream(leaderDir(leader)))).toBe(true);
    expectCleanFrames(ours, 0, 90);
    expect(await readEpochFile(copy, 90)).toEqual({
      ok: true,
      history: [
        { epoch: 0, startOffset: 0 },
        { epoch: 2, startOffset: 60 },
      ],
      dropped: 0,
    });
    // A lower epoch than the one it now knows is refused by the follower itself.
    f = startFollower(followerArgs(leader, copy, { leaderEpoch: 1 }));
    expect(await f.waitFor((e) => e.event === "stop", "fenced")).toMatchObject({
      reason: "fenced_leader_epoch",
    });

    // Refusal: a second follower whose known HWM (62) covers part of a divergent tail.
    const copy2 = join(tc.tempDir("narad-repl-div2"), "p00000");
    f = startFollower(followerArgs(leader, copy2, { leaderEpoch: 2 }));
    await f.waitFor((e) => e.event === "progress" && e.logEnd === 90, "second copy");
    f.child.kill("SIGTERM");
    await f.exited;
    const log2 = await ReplicaLog.open({ dir: copy2, segmentBytes: 16 * 1024, maxFrameBytes: 1 << 24 });
    await appendEpoch(copy2, 3, 90);
    await log2.append(encodeFrame(divergent, 90, 5));
    await writeCheckpoint(copy2, { leaderEpoch: 3, hwm: 92 });
    await appendEpoch(leaderDir(leader), 4, 90);
    f = startFollower(followerArgs(leader, copy2, { leaderEpoch: 4 }));
    const err = await f.waitFor((e) => e.event === "error", "refusal");
    expect(err).toMatchObject({ refused: true });
    expect(String(err.message)).toContain("below the known high watermark 92");
    await f.exited;
    const after = await ReplicaLog.open({ dir: copy2, segmentBytes: 16 * 1024, maxFrameBytes: 1 << 24 });
    expect(after.endOffset).toBe(93); // nothing was cut
  });

  it("a follower killed -9 right after it restarted its copy at the leader's oldest offset follows again (an empty history is not a divergent one)", async () => {
    const tc = clusters.create({
      args: ["--log-segment-bytes", "4096", "--retention-check-interval-ms", "100"],
    });
    const [a, b] = await tc.startAll(["a", "b"]);
    const r = await req(a!, "POST", "/v1/topics", { name: topic, partitions: 1, retention_bytes: 8192 });
    expect(r.status, r.text).toBe(201);
    const leader = tc.mc.owners(topic)[0] === "a" ? a! : b!;
    await produceRange(leader, 0, 300);
    // A replicated leader's history starts at its first epoch's offset, 0.
    await appendEpoch(leaderDir(leader), 0, 0);
    const oldest = async () =>
      (await req(leader, "GET", `/v1/topics/${topic}?partition=0`)).json().partition_stats[0]
        .oldest_offset as number;
    await eventually("retention deleted the oldest segments", 15_000, async () => (await oldest()) > 0);
    // An empty copy (a new replica) is below the leader's oldest offset: it
    // restarts at it, and is killed -9 before any frame arrives.
    const copy = join(tc.tempDir("narad-repl-reset"), "p00000");
    const first = startFollower(followerArgs(leader, copy, { crashAfter: "reset" }));
    const reset = await first.waitFor((e) => e.event === "reset", "reset");
    expect(reset.from).toBe(0);
    expect(reset.to as number).toBeGreaterThan(0);
    await first.exited;
    expect(first.child.signalCode).toBe("SIGKILL");
    // The next life must follow from there, not refuse a truncation to 0.
    const f = startFollower(followerArgs(leader, copy));
    await f.waitFor((e) => e.event === "progress" && e.logEnd === 300, "caught up after the crash");
    f.child.kill("SIGTERM");
    await f.exited;
  });

  it("each broker writes a volume-id marker on its first start, finds it again after a restart, and reports it in /admin/v1/status", async () => {
    const tc = clusters.create();
    const [a] = await tc.startAll(["a"]);
    const first = await req(a!, "GET", "/admin/v1/status");
    expect(first.status, first.text).toBe(200);
    const v1 = first.json().volume;
    expect(v1).toMatchObject({ state: "created", memberId: "a" });
    expect(v1.uuid).toMatch(/^[0-9a-f-]{36}$/);
    const marker = JSON.parse(await readFile(join(a!.dir, "volume-id"), "utf8"));
    expect(marker).toEqual({ uuid: v1.uuid, clusterUid: "", memberId: "a" });
    const again = await tc.restart("a");
    const v2 = (await req(again, "GET", "/admin/v1/status")).json().volume;
    expect(v2).toEqual({ state: "own", uuid: v1.uuid, memberId: "a" });
  });

  it("is authenticated like every cluster call: without the cluster secret's token, UNAUTHENTICATED", async () => {
    const tc = clusters.create();
    const secretFile = join(tc.tempDir("narad-repl-secret"), "cluster-secret");
    writeFileSync(secretFile, "replication-test-cluster-secret-01");
    const a = await tc.start("a", { args: ["--cluster-secret-file", secretFile] });
    const r = await req(a, "POST", "/v1/topics", { name: topic, partitions: 1 });
    expect(r.status, r.text).toBe(201);
    const request = {
      topic,
      partition: 0,
      fetch_offset: 0,
      leader_epoch: 0,
      max_bytes: 1024,
      max_wait_ms: 0,
      replica_id: "t",
      replica_volume_id: "",
    };
    const anonymous = testPeerPool();
    const signed = testPeerPool({
      interceptors: [
        clusterAuthClientInterceptor(() => clusterRpcToken("replication-test-cluster-secret-01")),
      ],
    });
    pools.push(anonymous, signed);
    const refused = await anonymous
      .peer(a.clusterAddress)
      .replicaFetch(request)
      .then(
        () => undefined,
        (e: unknown) => e as { cause?: { code?: number } },
      );
    expect(refused?.cause?.code).toBe(status.UNAUTHENTICATED);
    const refusedOfe = await anonymous
      .peer(a.clusterAddress)
      .offsetForLeaderEpoch({ topic, partition: 0, epoch: 0, leader_epoch: 0 })
      .then(
        () => undefined,
        (e: unknown) => e as { cause?: { code?: number } },
      );
    expect(refusedOfe?.cause?.code).toBe(status.UNAUTHENTICATED);
    expect(await signed.peer(a.clusterAddress).replicaFetch(request)).toMatchObject({
      error: "",
      leader_epoch: 0,
    });
  });
});
