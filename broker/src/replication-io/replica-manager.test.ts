// The replica manager as a follower against a leader that answers what it
// likes (a hostile or broken cluster member): what the follower writes from
// a fetch answer stays inside its own partition directory.

import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { readFrontier } from "../consumer/frontier-file.ts";
import { topicFixture } from "../meta/contract.ts";
import type { PbReplicaFetchResponse } from "../rpc/proto.ts";
import { ReplicaManager } from "./replica-manager.ts";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "narad-replica-manager-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const until = async (cond: () => boolean | Promise<boolean>, what: string): Promise<void> => {
  for (let i = 0; i < 500; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
};

describe("replica manager: a follower's fetch answers", () => {
  it("writes the leader's group frontiers only under valid group names, inside its partition dir", async () => {
    const topicsDir = join(root, "data", "topics");
    const dirOf = (topic: string, p: number) => join(topicsDir, topic, `p${String(p).padStart(5, "0")}`);
    const record: ReplicaAssignment = {
      partition: 0,
      leader: "evil",
      replicas: ["evil", "me"],
      isr: [
        { member: "evil", volumeId: "v-evil" },
        { member: "me", volumeId: "v-me" },
      ],
      leaderEpoch: 0,
    };
    const topic = { ...topicFixture("t", { partitions: 1, replication_factor: 2 }), uid: "u" };
    let answered = 0;
    const answer = (over: Partial<PbReplicaFetchResponse>): PbReplicaFetchResponse => ({
      error: "",
      message: "",
      frames: Buffer.alloc(0),
      leader_hwm: 0,
      leader_epoch: 0,
      log_start_offset: 0,
      log_end_offset: 0,
      epoch_starts: [],
      frontiers: [],
      fanout_cursors: [],
      ...over,
    });
    const manager = new ReplicaManager({
      nodeId: "me",
      volumeId: "v-me",
      metastore: {
        listTopics: () => [topic],
        getTopic: (name) => (name === "t" ? topic : undefined),
        replicaAssignment: (name, p) => (name === "t" && p === 0 ? record : undefined),
        members: () => [
          { id: "evil", address: "127.0.0.1:1", clusterAddress: "127.0.0.1:2", state: "Active" },
        ],
        onChange: () => () => {},
      },
      logs: {
        get: () => Promise.reject(new Error("a follower never opens the log")),
        partitionDir: dirOf,
        closePartition: async () => {},
        removePartition: async () => {},
      },
      peers: {
        peer: () =>
          ({
            offsetForLeaderEpoch: async () => ({
              error: "",
              message: "",
              epoch: 0,
              end_offset: 0,
              leader_epoch: 0,
            }),
            replicaFetch: async (_req: unknown, signal?: AbortSignal) => {
              answered++;
              if (answered > 1) {
                await new Promise<void>((r) => signal?.addEventListener("abort", () => r(), { once: true }));
                return answer({});
              }
              return answer({
                frontiers: [
                  { group: "../../../../escaped", offset: 7 },
                  { group: "a/b", offset: 7 },
                  { group: "good", offset: 5 },
                  { group: "negative", offset: -1 },
                ],
              });
            },
          }) as never,
      },
      options: {
        replicaLagMs: 10_000,
        replicationTimeoutMs: 10_000,
        isrCheckIntervalMs: 500,
        isrRetryMs: 1_000,
        fetchMaxBytes: 1 << 20,
        fetchMaxWaitMs: 500,
        segmentBytes: 1 << 20,
        maxFrameBytes: 1 << 20,
        retryBackoffMs: 20,
        frontierRefreshMs: 1_000,
        checkpointIntervalMs: 1_000,
      },
      nowMs: () => Date.now(),
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    manager.start();
    try {
      await until(() => answered >= 2, "the second fetch (the first answer handled)");
      // Nothing outside the partition dir, nothing under a name no group can have.
      expect((await readdir(root)).sort()).toEqual(["data"]);
      expect((await readdir(join(root, "data"))).sort()).toEqual(["topics"]);
      expect((await readdir(topicsDir)).sort()).toEqual(["t"]);
      expect((await readdir(join(topicsDir, "t"))).sort()).toEqual(["p00000"]);
      expect((await readdir(join(dirOf("t", 0), "consumers"))).sort()).toEqual(["good.offset"]);
      expect(await readFrontier(dirOf("t", 0), "good")).toBe(5);
    } finally {
      await manager.close();
    }
  });
});
