// Consumer groups in a cluster (2 in-process brokers). A seek sent to one
// node moves the offset of partitions the other owns, at their owner (the
// SeekGroup RPC), which writes its frontier file before answering; a bad
// offset for a peer's partition is the same JSON 400 a single node gives.
// Listing and deleting a group go to every owner (GroupStats, DeleteGroup):
// before, each node answered from its own files only, so a peer's
// partitions showed committed 0 and lag 0, and a delete left the peer's
// frontiers behind.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, hwm, produceIds, req, type TestNode, testClusters } from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, { prefix: "narad-seek-cluster" });

function frontierFile(node: TestNode, topic: string, partition: number, group: string): number {
  const p = `p${String(partition).padStart(5, "0")}`;
  const file = join(node.dir, "topics", topic, p, "consumers", `${group}.offset`);
  return Number(readFileSync(file).readBigUInt64BE(0));
}

function frontierPath(node: TestNode, topic: string, partition: number, group: string): string {
  const p = `p${String(partition).padStart(5, "0")}`;
  return join(node.dir, "topics", topic, p, "consumers", `${group}.offset`);
}

async function consumePartition(node: TestNode, topic: string, partition: number, group: string) {
  const r = await req(node, "GET", `/v1/topics/${topic}/consume?partition=${partition}&group=${group}`);
  if (r.status === 204) return undefined;
  expect(r.status, r.text).toBe(200);
  return r.json() as { offset: number; receipt_handle: string };
}

describe("group seek across brokers", () => {
  it("moves a peer's partition at its owner; its frontier file holds the offset before the 200", async () => {
    const tc = clusters.create();
    const [a, b] = (await tc.startAll(["a", "b"])) as [TestNode, TestNode];
    expect((await req(a, "POST", "/v1/topics", { name: "t", partitions: 4 })).status).toBe(201);
    const owners = tc.mc.owners("t");
    const remote = owners.indexOf("b");
    const local = owners.indexOf("a");
    expect(remote).toBeGreaterThanOrEqual(0);
    expect(local).toBeGreaterThanOrEqual(0);
    for (let p = 0; p < 4; p++) {
      const r = await produceIds(a, "t", [0, 1, 2, 3, 4], p);
      expect(r.status, r.text).toBe(202);
    }
    await eventually("all visible", 20_000, async () => {
      for (let p = 0; p < 4; p++) if ((await hwm(a, "t", p)) !== 5) return false;
      return true;
    });

    // Consume and ack partition `remote` through a (forwarded to b).
    const held = await consumePartition(a, "t", remote, "g");
    expect(held?.offset).toBe(0);

    const r = await req(a, "POST", "/v1/topics/t/groups/g/seek", { to: "latest" });
    expect(r.status, r.text).toBe(200);
    const parts = r.json().partitions as Array<{ partition: number; previous: number; committed: number }>;
    expect(parts.map((p) => p.committed)).toEqual([5, 5, 5, 5]);
    for (let p = 0; p < 4; p++) expect(frontierFile(owners[p] === "a" ? a : b, "t", p, "g")).toBe(5);
    // The lease b handed out before the seek is gone.
    const stale = await req(
      a,
      "POST",
      `/v1/topics/t/ack?receipt_handle=${encodeURIComponent(held!.receipt_handle)}`,
    );
    expect(stale.status).toBe(410);
    expect(await consumePartition(b, "t", remote, "g")).toBeUndefined();

    // Back to offset 2 of b's partition, asked through a; consumed through b.
    const back = await req(a, "POST", "/v1/topics/t/groups/g/seek", { partition: remote, offset: 2 });
    expect(back.json().partitions).toEqual([{ partition: remote, previous: 5, committed: 2 }]);
    expect(frontierFile(b, "t", remote, "g")).toBe(2);
    expect((await consumePartition(b, "t", remote, "g"))?.offset).toBe(2);

    // A refusal from the owner comes back as the same JSON 400.
    const past = await req(a, "POST", "/v1/topics/t/groups/g/seek", { partition: remote, offset: 6 });
    expect(past.status, past.text).toBe(400);
    expect(past.json().code).toBe("bad_request");
    expect(past.json().error).toMatch(/past the partition's high watermark 5/);
    expect(frontierFile(b, "t", remote, "g")).toBe(2);
  });

  it("every node lists each partition as its owner holds it, and a delete through one node forgets the group everywhere", async () => {
    const tc = clusters.create();
    const [a, b] = (await tc.startAll(["a", "b"])) as [TestNode, TestNode];
    expect((await req(a, "POST", "/v1/topics", { name: "l", partitions: 4 })).status).toBe(201);
    const owners = tc.mc.owners("l");
    for (let p = 0; p < 4; p++) expect((await produceIds(a, "l", [0, 1, 2, 3], p)).status).toBe(202);
    await eventually("all visible", 20_000, async () => {
      for (let p = 0; p < 4; p++) if ((await hwm(a, "l", p)) !== 4) return false;
      return true;
    });
    // Partition p is committed to p (acked through its owner), one lease left in flight on partition 3.
    for (let p = 0; p < 4; p++) {
      const s = await req(a, "POST", "/v1/topics/l/groups/g/seek", { partition: p, offset: p });
      expect(s.status, s.text).toBe(200);
    }
    expect((await consumePartition(a, "l", 3, "g"))?.offset).toBe(3);

    const want = [0, 1, 2, 3].map((p) => ({
      partition: p,
      committed: p,
      in_flight: p === 3 ? 1 : 0,
      acked_ahead: 0,
      lag: 4 - p,
    }));
    for (const node of [a, b]) {
      const r = await req(node, "GET", "/v1/topics/l/groups");
      expect(r.status, r.text).toBe(200);
      const groups = r.json().groups as Array<{ name: string; lag: number; partitions: unknown[] }>;
      expect(
        groups.map((g) => g.name),
        node.id,
      ).toEqual(["g"]);
      expect(groups[0]?.partitions, `through ${node.id}`).toEqual(want);
      expect(groups[0]?.lag).toBe(4 + 3 + 2 + 1);
    }

    const del = await req(a, "DELETE", "/v1/topics/l/groups/g");
    expect(del.status, del.text).toBe(204);
    for (let p = 0; p < 4; p++)
      expect(existsSync(frontierPath(owners[p] === "a" ? a : b, "l", p, "g")), `partition ${p}`).toBe(false);
    for (const node of [a, b])
      expect((await req(node, "GET", "/v1/topics/l/groups")).json().groups).toEqual([]);
    expect((await req(b, "DELETE", "/v1/topics/l/groups/g")).status).toBe(404);
  });
});
