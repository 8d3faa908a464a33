// Issue #13 item 1, end to end in one process with the real parts (ingress
// WAL, file metastore, log store, cluster destinations, dispatcher): records
// accepted for a topic that is then deleted and created again (with fewer
// partitions) must neither land in the new topic nor pin the checkpoint.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as k from "../constants.ts";
import type { WalRecordInput } from "../core/records.ts";
import { type LogStore, openLogStore } from "../log/log-store.ts";
import { topicFixture } from "../meta/contract.ts";
import { openFileMetastore } from "../meta/file-metastore.ts";
import type { Metastore } from "../meta/types.ts";
import { openIngressWal } from "../wal/ingress-wal.ts";
import type { IngressWal } from "../wal/types.ts";
import { smallOptions } from "../wal/wal-test-helpers.ts";
import { clusterDestinations } from "./cluster-destinations.ts";
import { createDispatcher } from "./dispatcher.ts";
import type { Dispatcher } from "./types.ts";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe("dispatch across a delete and re-create of a topic name", () => {
  let root: string;
  let parts: { wal: IngressWal; logs: LogStore; metastore: Metastore; dispatcher?: Dispatcher } | undefined;
  afterEach(async () => {
    await parts?.dispatcher?.stop();
    await parts?.wal.close();
    await parts?.logs.closeAll();
    await parts?.metastore.close();
    await rm(root, { recursive: true, force: true });
  });

  it("discards the old incarnation's records and keeps dispatching every topic", async () => {
    root = await mkdtemp(join(tmpdir(), "narad-identity-"));
    const metastore = await openFileMetastore({ dataDir: root, nodeId: "n0", address: "127.0.0.1:1" });
    const logs = await openLogStore({
      dataDir: root,
      segmentBytes: 1 << 20,
      indexIntervalBytes: 4096,
      maxFrameBytes: 1 << 20,
      hwmPersistIntervalMs: 1000,
      nowMs: Date.now,
      topicExists: (t) => metastore.getTopic(t) !== undefined,
    });
    const wal = await openIngressWal({ ...smallOptions(join(root, "ingress")), segmentBytes: 1 << 20 });
    parts = { wal, logs, metastore };

    const old = await metastore.createTopic(topicFixture("t", { partitions: 4 }));
    const perPartition = 50;
    const oldRecords: WalRecordInput[] = [];
    for (let p = 0; p < 4; p++)
      for (let i = 0; i < perPartition; i++)
        oldRecords.push({
          topic: "t",
          key: Buffer.from(`k${i}`),
          partition: p,
          createdMs: Date.now(),
          payload: Buffer.from(`old-${p}-${i}`),
          topicUid: old.uid,
        });
    await wal.append(oldRecords);
    // Deleted and created again, with fewer partitions, before the dispatcher ran.
    await metastore.deleteTopic("t");
    await logs.deleteTopic("t");
    const fresh = await metastore.createTopic(topicFixture("t", { partitions: 1 }));
    const other = await metastore.createTopic(topicFixture("u", { partitions: 1 }));
    await wal.append([
      {
        topic: "u",
        key: Buffer.from("k"),
        partition: 0,
        createdMs: Date.now(),
        payload: Buffer.from("u-0"),
        topicUid: other.uid,
      },
    ]);

    const dispatcher = createDispatcher({
      wal,
      destinations: clusterDestinations({
        nodeId: "n0",
        metastore,
        logs,
        peers: { peer: () => Promise.reject(new Error("single node")) as never },
        retryAfterSeconds: 1,
      }),
      incarnation: wal.incarnation,
      options: {
        idlePollMs: 5,
        windowRecords: 64,
        windowCapRecords: 256,
        targetPerPartition: 16,
        lookaheadWindows: 2,
        rerouteAfterPasses: k.dispatchRerouteAfterPasses,
        commitTimeoutMs: 10_000,
        errorBackoffMs: 20,
        commitFanout: 4,
        maxBatchBytes: 1 << 20,
      },
      logger: quiet,
      nowMs: Date.now,
    });
    parts.dispatcher = dispatcher;
    dispatcher.start();
    // Every record is done: the old ones discarded (their incarnation is
    // confirmed gone), u's committed; nothing pins the checkpoint.
    expect(await dispatcher.drain(15_000)).toBe(true);
    const newT = await (await logs.get("t", 0)).read(0, 1000, 1 << 20);
    expect(newT.map((r) => r.payload.toString())).toEqual([]);
    expect(fresh.uid).not.toBe(old.uid);
    const u = await (await logs.get("u", 0)).read(0, 10, 1 << 20);
    expect(u.map((r) => r.payload.toString())).toEqual(["u-0"]);
    expect(wal.stats().pendingRecords).toBe(0);
  });
});
