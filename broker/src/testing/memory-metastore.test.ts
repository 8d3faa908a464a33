// The memory metastore's replicated records: placement of a replicated
// topic, the owner as the leader, the ISR compare-and-swap and its faults.
import { describe, expect, it } from "vitest";
import type { IsrMember } from "../../../packages/api/src/v1alpha1/replication.ts";
import { topicFixture } from "../meta/contract.ts";
import type { Member } from "../meta/types.ts";
import { createMemoryCluster } from "./memory-metastore.ts";

const members = (): Member[] =>
  ["a", "b", "c", "d"].map((id, i) => ({
    id,
    address: `127.0.0.1:${8000 + i}`,
    state: "Active",
    volumeId: `vol-${id}`,
  }));

describe("memory metastore: replicated partitions", () => {
  it("places a replicated topic's partitions on distinct Active members, all in the ISR with their volumes, epoch 0", async () => {
    const mc = createMemoryCluster(members());
    const ms = mc.metastore();
    await ms.createTopic(topicFixture("r", { partitions: 4, replication_factor: 3, min_insync_replicas: 2 }));
    for (let p = 0; p < 4; p++) {
      const r = ms.replicaAssignment?.("r", p);
      expect(r?.partition).toBe(p);
      expect(r?.leaderEpoch).toBe(0);
      expect(new Set(r?.replicas).size).toBe(3);
      expect(r?.leader).toBe(r?.replicas[0]);
      expect(r?.isr).toEqual(r?.replicas.map((m) => ({ member: m, volumeId: `vol-${m}` })));
      expect(ms.ownerOf("r", p)).toBe(r?.leader);
    }
    // Leaders spread round-robin.
    expect(new Set([0, 1, 2, 3].map((p) => ms.ownerOf("r", p))).size).toBe(4);
    // Grown partitions are placed too; a single-copy topic has no records.
    await ms.updateTopic("r", { partitions: 5 });
    expect(ms.replicaAssignment?.("r", 4)?.replicas).toHaveLength(3);
    await ms.createTopic(topicFixture("plain", { partitions: 2 }));
    expect(ms.replicaAssignment?.("plain", 0)).toBeUndefined();
    // Records go with the topic.
    await ms.deleteTopic("r");
    expect(ms.replicaAssignment?.("r", 0)).toBeUndefined();
  });

  it("takes records and volume ids from tests, and the owner follows the leader (none while offline)", async () => {
    const mc = createMemoryCluster(members());
    const ms = mc.metastore();
    let changes = 0;
    ms.onChange(() => changes++);
    await ms.createTopic(topicFixture("t", { partitions: 2, replication_factor: 3 }));
    const record = {
      partition: 1,
      leader: "c",
      replicas: ["c", "a", "b"],
      isr: [
        { member: "c", volumeId: "vol-c" },
        { member: "a", volumeId: "vol-a" },
      ],
      leaderEpoch: 7,
    };
    mc.setReplicaAssignment("t", 1, record);
    expect(ms.replicaAssignment?.("t", 1)).toEqual(record);
    expect(ms.ownerOf("t", 1)).toBe("c");
    expect(mc.owners("t")[1]).toBe("c");
    // A copy: changing what a caller got changes nothing stored.
    ms.replicaAssignment?.("t", 1)?.isr.pop();
    expect(ms.replicaAssignment?.("t", 1)?.isr).toHaveLength(2);
    mc.setReplicaAssignment("t", 1, { ...record, leader: null, leaderEpoch: 8 });
    expect(ms.ownerOf("t", 1)).toBe("");
    mc.setReplicaAssignment("t", 1, undefined);
    expect(ms.replicaAssignment?.("t", 1)).toBeUndefined();
    expect(() => mc.setReplicaAssignment("t", 5, record)).toThrow(/no partition/);
    expect(() => mc.setReplicaAssignment("t", 0, record)).toThrow(/record of partition 1/);
    mc.setVolumeId("b", "vol-b2");
    expect(ms.members().find((m) => m.id === "b")?.volumeId).toBe("vol-b2");
    mc.setVolumeId("b", undefined);
    expect(ms.members().find((m) => m.id === "b")).not.toHaveProperty("volumeId");
    expect(changes).toBeGreaterThanOrEqual(5);
  });

  it("records an ISR only while the record names that leader at that epoch", async () => {
    const mc = createMemoryCluster(members());
    const ms = mc.metastore();
    await ms.createTopic(topicFixture("t", { partitions: 1, replication_factor: 3 }));
    const r = ms.replicaAssignment?.("t", 0);
    if (r === undefined || r.leader === null) throw new Error("no record");
    const leader = r.leader;
    const shrunk = r.isr.slice(0, 2);
    const out = await ms.recordIsr?.("t", 0, { leader, leaderEpoch: 0 }, shrunk);
    expect(out).toEqual({ kind: "recorded", record: { ...r, isr: shrunk } });
    expect(ms.replicaAssignment?.("t", 0)?.isr).toEqual(shrunk);
    expect(mc.isrWrites()).toBe(1);
    // A stale epoch, another leader, an offline record, a partition or topic that is gone: stale, nothing changes.
    const expectStale = async (
      topic: string,
      p: number,
      expect_: { leader: string; leaderEpoch: number },
    ): Promise<void> => {
      const before = ms.replicaAssignment?.("t", 0);
      expect((await ms.recordIsr?.(topic, p, expect_, r.isr))?.kind).toBe("stale");
      expect(ms.replicaAssignment?.("t", 0)).toEqual(before);
    };
    mc.setReplicaAssignment("t", 0, { ...r, isr: shrunk, leaderEpoch: 1 });
    await expectStale("t", 0, { leader, leaderEpoch: 0 });
    await expectStale("t", 0, { leader: "nobody", leaderEpoch: 1 });
    mc.setReplicaAssignment("t", 0, { ...r, isr: shrunk, leader: null, leaderEpoch: 2 });
    await expectStale("t", 0, { leader, leaderEpoch: 2 });
    await expectStale("t", 3, { leader, leaderEpoch: 2 });
    await expectStale("gone", 0, { leader, leaderEpoch: 2 });
    expect(mc.isrWrites()).toBe(1);
    await ms.deleteTopic("t");
    expect((await ms.recordIsr?.("t", 0, { leader, leaderEpoch: 2 }, r.isr))?.kind).toBe("stale");
  });

  it("with the ISR a change was decided on: written only on that ISR or the change itself, else superseded", async () => {
    const mc = createMemoryCluster(members());
    const ms = mc.metastore();
    await ms.createTopic(topicFixture("t", { partitions: 1, replication_factor: 3 }));
    const r = ms.replicaAssignment?.("t", 0);
    if (r === undefined || r.leader === null) throw new Error("no record");
    const [self, x, y] = r.isr as [IsrMember, IsrMember, IsrMember];
    const at = { leader: r.leader, leaderEpoch: 0, isr: [y, x, self] }; // any order
    // Decided on {self, x, y}: shrink y away. Meanwhile the operator drops x.
    mc.setReplicaAssignment("t", 0, { ...r, replicas: [self.member, y.member], isr: [self, y] });
    const out = await ms.recordIsr?.("t", 0, at, [self, x]);
    expect(out).toMatchObject({ kind: "superseded", record: { isr: [self, y] } });
    expect(ms.replicaAssignment?.("t", 0)?.isr).toEqual([self, y]);
    // On the ISR it was decided on, or when the change is already there: recorded.
    expect((await ms.recordIsr?.("t", 0, { ...at, isr: [self, y] }, [self]))?.kind).toBe("recorded");
    expect((await ms.recordIsr?.("t", 0, { ...at, isr: [self, y] }, [self]))?.kind).toBe("recorded");
    expect(ms.replicaAssignment?.("t", 0)?.isr).toEqual([self]);
  });

  it("answers unknown while a fault is set: the change applied (answer lost) or not (request lost)", async () => {
    const mc = createMemoryCluster(members());
    const ms = mc.metastore();
    await ms.createTopic(topicFixture("t", { partitions: 1, replication_factor: 3 }));
    const r = ms.replicaAssignment?.("t", 0);
    if (r === undefined || r.leader === null) throw new Error("no record");
    const at = { leader: r.leader, leaderEpoch: 0 };
    mc.failIsrWrites("lost", 1);
    expect((await ms.recordIsr?.("t", 0, at, r.isr.slice(0, 1)))?.kind).toBe("unknown");
    expect(ms.replicaAssignment?.("t", 0)?.isr).toEqual(r.isr);
    // The count ran out: the next write is answered.
    expect((await ms.recordIsr?.("t", 0, at, r.isr.slice(0, 2)))?.kind).toBe("recorded");
    mc.failIsrWrites("applied");
    expect((await ms.recordIsr?.("t", 0, at, r.isr.slice(0, 1)))?.kind).toBe("unknown");
    expect(ms.replicaAssignment?.("t", 0)?.isr).toEqual(r.isr.slice(0, 1));
    // A refusal's answer is lost too.
    expect((await ms.recordIsr?.("t", 0, { ...at, leaderEpoch: 9 }, r.isr))?.kind).toBe("unknown");
    mc.failIsrWrites(undefined);
    expect((await ms.recordIsr?.("t", 0, { ...at, leaderEpoch: 9 }, r.isr))?.kind).toBe("stale");
    expect((await ms.recordIsr?.("t", 0, at, r.isr))?.kind).toBe("recorded");
  });
});
