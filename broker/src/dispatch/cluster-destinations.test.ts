import { describe, expect, it } from "vitest";
import type { CommitRecord } from "../core/records.ts";
import { NaradError } from "../errors.ts";
import type { CommitResult, PartitionLog } from "../log/types.ts";
import type { PeerClient } from "../rpc/client.ts";
import { createMemoryCluster } from "../testing/memory-metastore.ts";
import { clusterDestinations } from "./cluster-destinations.ts";

const topicT = {
  name: "t",
  partitions: 3,
  retention_ms: 0,
  retention_bytes: 0,
  visibility_timeout_ms: 1,
  max_in_flight_per_partition: 1,
  max_acked_ahead_per_partition: 1,
  created_at: "",
};

const rec = (seq: number): CommitRecord => ({
  key: Buffer.from("k"),
  createdMs: 1,
  payload: Buffer.from("p"),
  incarnation: "0123456789abcdef",
  seq,
});

function setup() {
  const mc = createMemoryCluster([
    { id: "a", address: "127.0.0.1:7942", state: "Active" },
    { id: "b", address: "127.0.0.2:7942", state: "Active" },
    { id: "c", address: "127.0.0.3:7942", clusterAddress: "10.9.9.9:1234", state: "Active" },
  ]);
  const metastore = mc.metastore();
  const localCommits: Array<{ topic: string; partition: number; n: number }> = [];
  const remoteCommits: Array<{ address: string; partition: number; n: number; deadlineMs: number }> = [];
  const notified: string[] = [];
  const log = (topic: string, partition: number) =>
    ({
      commitDurable: async (records: readonly CommitRecord[]): Promise<CommitResult> => {
        localCommits.push({ topic, partition, n: records.length });
        return { baseOffset: 0, appended: records.length, duplicates: 0 };
      },
    }) as unknown as PartitionLog;
  const d = clusterDestinations({
    nodeId: "a",
    metastore,
    logs: { get: async (t, p) => log(t, p) },
    peers: {
      peer: (address) =>
        ({
          address,
          commit: async (
            _t: string,
            partition: number,
            records: readonly CommitRecord[],
            deadlineMs: number,
          ) => {
            remoteCommits.push({ address, partition, n: records.length, deadlineMs });
            return { baseOffset: 5, appended: records.length, duplicates: 0 };
          },
        }) as unknown as PeerClient,
    },
    onLocalCommitted: (t, p) => notified.push(`${t}/${p}`),
    retryAfterSeconds: 1,
  });
  return { mc, metastore, d, localCommits, remoteCommits, notified };
}

describe("clusterDestinations", () => {
  it("resolves owners and member states from the metastore", async () => {
    const { mc, metastore, d } = setup();
    const { uid } = await metastore.createTopic(topicT);
    expect(mc.owners("t")).toEqual(["a", "b", "c"]);
    expect(d.resolve("t", 1)).toEqual({ kind: "owner", nodeId: "b", state: "Active", topicUid: uid });
    expect(d.resolve("t", 1, uid)).toEqual({ kind: "owner", nodeId: "b", state: "Active", topicUid: uid });
    mc.setState("b", "Down");
    expect(d.resolve("t", 1)).toEqual({ kind: "owner", nodeId: "b", state: "Down", topicUid: uid });
    mc.removeMember("c");
    expect(d.resolve("t", 2)).toEqual({ kind: "owner", nodeId: "c", state: "Maintenance", topicUid: uid });
    expect(d.resolve("t", 3)).toEqual({ kind: "topic-missing" });
    expect(d.resolve("nope", 0)).toEqual({ kind: "topic-missing" });
    expect(d.partitionCount("t")).toBe(3);
    expect(await d.confirmTopicDeleted("t")).toBe(false);
    await metastore.deleteTopic("t");
    expect(await d.confirmTopicDeleted("t")).toBe(true);
  });

  it("commits locally for my partitions and over RPC to the owner's cluster address otherwise", async () => {
    const { d, metastore, localCommits, remoteCommits, notified } = setup();
    await metastore.createTopic(topicT);
    await d.commit("a", "t", 0, [rec(1), rec(2)], 1000);
    await d.commit("b", "t", 1, [rec(3)], 2000);
    await d.commit("c", "t", 2, [rec(4)], 3000);
    expect(localCommits).toEqual([{ topic: "t", partition: 0, n: 2 }]);
    expect(notified).toEqual(["t/0"]);
    expect(remoteCommits).toEqual([
      { address: "127.0.0.2:7943", partition: 1, n: 1, deadlineMs: 2000 },
      { address: "10.9.9.9:1234", partition: 2, n: 1, deadlineMs: 3000 },
    ]);
  });

  it("refuses (503, retryable) a commit to a node that is not a member", async () => {
    const { d } = setup();
    const err = await d.commit("zz", "t", 0, [rec(1)], 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NaradError);
    expect((err as NaradError).status).toBe(503);
  });

  it("never commits a deleted incarnation's records into a namesake (issue #13 item 1)", async () => {
    const { d, metastore, localCommits } = setup();
    const old = await metastore.createTopic(topicT);
    await metastore.deleteTopic("t");
    const fresh = await metastore.createTopic({ ...topicT, partitions: 1 });
    // The records' incarnation is gone: missing, whatever partition they name.
    expect(d.resolve("t", 0, old.uid)).toEqual({ kind: "topic-missing" });
    expect(d.resolve("t", 2, old.uid)).toEqual({ kind: "topic-missing" });
    expect(await d.confirmTopicDeleted("t", old.uid)).toBe(true);
    expect(await d.confirmTopicDeleted("t", fresh.uid)).toBe(false);
    // An owner whose view differs from the dispatcher's refuses without appending.
    const stale = [{ ...rec(1), topicUid: old.uid }];
    const err = await d.commit("a", "t", 0, stale, 1000).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("TOPIC_UID_MISMATCH");
    expect(localCommits).toEqual([]);
    await d.commit("a", "t", 0, [{ ...rec(2), topicUid: fresh.uid }], 1000);
    expect(localCommits).toEqual([{ topic: "t", partition: 0, n: 1 }]);
  });
});
