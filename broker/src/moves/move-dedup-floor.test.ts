// A partition move carries the dedup floor. The source's retention deleted
// the segments holding an ingress incarnation's seqs; its own log still drops
// a re-sent record (its dedup-floor file), but the byte-for-byte copy holds
// only the remaining segments. Without the floor in the manifest, the new
// owner rebuilt its dedup map from those alone and committed the re-send a
// second time.
//
// Real pieces: the source's log store and MoveSource, the destination's
// MoveManager and staging, the manifest through the protobuf codec the
// cluster RPC uses; only the transport is a direct call.

import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { openLogStore } from "../log/log-store.ts";
import { openPartitionLog } from "../log/partition-log.ts";
import { topicFixture } from "../meta/contract.ts";
import type { PeerClient } from "../rpc/client.ts";
import { clusterService, type PbMoveManifest } from "../rpc/proto.ts";
import { createMemoryCluster } from "../testing/memory-metastore.ts";
import { quietSourceDeps } from "../testing/move-source-world.ts";
import { MoveManager } from "./destination.ts";
import { MoveSource } from "./source.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const incarnation = "abcdefabcdef0001";
/** A later ingress WAL incarnation (another node, or the same node after a restart). */
const later = "abcdefabcdef0002";
const logOptions = { segmentBytes: 600, indexIntervalBytes: 128, maxFrameBytes: 1 << 20 };

function recs(fromSeq: number, n: number, inc = incarnation): CommitRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`k${fromSeq + i}`),
    createdMs: 1,
    payload: Buffer.alloc(60, fromSeq + i),
    incarnation: inc,
    seq: fromSeq + i,
  }));
}

/** What the destination receives: the manifest encoded and decoded as on the wire. */
function overTheWire(m: PbMoveManifest): PbMoveManifest {
  const def = clusterService().MoveManifest;
  return def.responseDeserialize(def.responseSerialize(m));
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("partition move and the dedup floor", () => {
  it("a record re-sent to the new owner after a move is still a duplicate when retention deleted its segment", async () => {
    const root = mkdtempSync(join(tmpdir(), "narad-move-floor-"));
    dirs.push(root);
    const cluster = createMemoryCluster([
      { id: "n0", address: "127.0.0.1:1", clusterAddress: "127.0.0.1:2", state: "Active" },
      { id: "n1", address: "127.0.0.1:3", clusterAddress: "127.0.0.1:4", state: "Active" },
    ]);
    const meta = cluster.metastore();
    await meta.createTopic(topicFixture("t", { partitions: 1 }));
    cluster.setOwner("t", 0, "n0");

    // Source: seqs 1..50 of one incarnation in ten commits over many small
    // segments, then records of a later incarnation in a segment of their
    // own; retention keeps only that newest (active) segment, so no
    // remaining segment says anything of the first incarnation.
    const store = await openLogStore({
      dataDir: join(root, "n0"),
      ...logOptions,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 1_000,
    });
    const log = await store.get("t", 0);
    for (let i = 0; i < 10; i++) await log.commitDurable(recs(1 + i * 5, 5));
    await log.commitDurable(recs(1, 5, later));
    expect(log.stats().segments).toBeGreaterThan(3);
    await log.applyRetention(0, 1);
    expect(log.stats().segments).toBe(1);
    expect(log.stats().oldestOffset).toBe(50);
    // The source itself still drops a re-send of seq 3 (its floor file).
    expect((await log.commitDurable(recs(3, 1))).appended).toBe(0);

    const source = new MoveSource(
      quietSourceDeps({
        metastore: meta,
        logs: store,
        ownerVerify: async () => {
          throw new Error("not used: the source's copy outlives this test");
        },
        maxFreezeTtlMs: 30_000,
        deleteDelayMs: 600_000,
      }),
    );
    const peer = {
      moveManifest: async (t: string, p: number) => overTheWire(await source.manifest(t, p)),
      moveFetch: (r: {
        topic: string;
        partition: number;
        base: number;
        position: number;
        max_bytes: number;
      }) => source.fetch(r.topic, r.partition, r.base, r.position, r.max_bytes),
      moveFreeze: async (r: {
        topic: string;
        partition: number;
        token: string;
        ttl_ms: number;
        handoff?: boolean;
      }) => overTheWire(await source.freeze(r.topic, r.partition, r.token, r.ttl_ms, r.handoff ?? false)),
      moveUnfreeze: async (r: { topic: string; partition: number; token: string }) =>
        source.unfreeze(r.topic, r.partition, r.token),
      moveVerify: (r: {
        topic: string;
        partition: number;
        segments: Array<{ base: number; bytes: number }>;
      }) => source.verify(r.topic, r.partition, r.segments),
    } as unknown as PeerClient;

    const installed = join(root, "n1", "topics", "t", "p00000");
    const manager = new MoveManager({
      nodeId: "n1",
      dataDir: join(root, "n1"),
      metastore: meta,
      logs: {
        hold: () => () => undefined,
        install: async (_t, _p, from) => {
          mkdirSync(dirname(installed), { recursive: true });
          renameSync(from, installed);
        },
      },
      consumers: { dropPartition() {} },
      peers: { peer: () => peer },
      log: logOptions,
      timing: {
        chunkBytes: 4096,
        catchUp: { closeEnoughBytes: 1 << 20, maxRounds: 2, maxStalledRounds: 1 },
        freezeTtlMs: 30_000,
        renewIntervalMs: 50,
        retryMs: 20,
      },
      logger: { info() {}, warn() {}, error() {} },
    });
    try {
      await manager.start("t", 0, "n0");
      await until("move ready", () => manager.get("t", 0)?.state === "ready");
      cluster.setOwner("t", 0, "n1");
      await until("move done", () => manager.get("t", 0)?.state === "done");
    } finally {
      await manager.close();
      source.close();
    }

    const copy = await openPartitionLog({
      dir: installed,
      ...logOptions,
      hwmPersistIntervalMs: 60_000,
      nowMs: () => 2_000,
    });
    try {
      expect(copy.stats().highWatermark).toBe(55);
      expect(copy.stats().oldestOffset).toBe(50);
      expect(copy.committedSeq(incarnation)).toBe(50);
      expect(copy.committedSeq(later)).toBe(5);
      // The dispatcher re-sends seq 3 (e.g. its WAL checkpoint lagged): a duplicate, not a second copy.
      const again = await copy.commitDurable(recs(3, 1));
      expect(again.appended).toBe(0);
      expect(again.duplicates).toBe(1);
      expect(copy.stats().highWatermark).toBe(55);
      // A new seq is still committed.
      expect((await copy.commitDurable(recs(51, 1))).appended).toBe(1);
    } finally {
      await copy.close();
      await store.closeAll();
    }
  });
});
