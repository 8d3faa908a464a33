// Replication settings and replicated partition records through the /v1
// topic routes of an in-process cluster node (memory metastore, the way the
// operator would fill it): defaults by the number of brokers, the refusals,
// PATCH of the minimum, a fan-out child's own settings, and the leader,
// replicas, ISR and epoch in partition_stats.

import { afterEach, describe, expect, it } from "vitest";
import { type TestNode, testClusters } from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, { prefix: "narad-topic-repl" });

async function call(node: TestNode, method: "GET" | "POST" | "PATCH", url: string, body?: unknown) {
  const res = await node.broker.app.inject({
    method,
    url,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.statusCode, json: () => JSON.parse(res.body) };
}

/** One running node "a" and `others` members published beside it (no process: the routes here only read them). */
async function cluster(args: string[], others: string[]) {
  const tc = clusters.create({ args });
  const a = await tc.start("a");
  for (const [i, id] of others.entries())
    tc.mc.setMember({ id, address: `127.0.0.1:${1 + i}`, state: "Active", volumeId: `vol-${id}` });
  return { tc, a };
}

describe("topic replication settings in a cluster", () => {
  it("gate on: 3 copies, minimum 2 by default on 3 brokers; an explicit factor up to the brokers; above: 400", async () => {
    const { tc, a } = await cluster(["--replication", "on"], ["b", "c"]);
    const created = await call(a, "POST", "/v1/topics", { name: "t", partitions: 2 });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ replication_factor: 3, min_insync_replicas: 2 });
    expect(
      (await call(a, "POST", "/v1/topics", { name: "two", replication_factor: 2 })).json(),
    ).toMatchObject({ replication_factor: 2, min_insync_replicas: 2 });
    const above = await call(a, "POST", "/v1/topics", { name: "four", replication_factor: 4 });
    expect(above.status).toBe(400);
    expect(above.json().code).toBe("replication_factor_above_brokers");
    // Brokers leaving or gone do not count.
    tc.mc.setState("c", "Decommissioning");
    expect((await call(a, "POST", "/v1/topics", { name: "small" })).json()).toMatchObject({
      replication_factor: 1,
      min_insync_replicas: 1,
    });
    const three = await call(a, "POST", "/v1/topics", { name: "three", replication_factor: 3 });
    expect(three.json().code).toBe("replication_factor_above_brokers");
    // What was created keeps its settings whatever the cluster's size does.
    const listed = (await call(a, "GET", "/v1/topics")).json().topics as Array<{
      name: string;
      replication_factor: number;
    }>;
    expect(listed.map((x) => [x.name, x.replication_factor])).toEqual([
      ["small", 1],
      ["t", 3],
      ["two", 2],
    ]);
  });

  it("gate off: one copy on any cluster, and a factor above 1 is 400 replication_not_enabled", async () => {
    const { a } = await cluster([], ["b", "c", "d"]);
    expect((await call(a, "POST", "/v1/topics", { name: "t" })).json()).toMatchObject({
      replication_factor: 1,
      min_insync_replicas: 1,
    });
    const r = await call(a, "POST", "/v1/topics", { name: "r", replication_factor: 3 });
    expect(r.status).toBe(400);
    expect(r.json().code).toBe("replication_not_enabled");
  });

  it("PATCH moves the minimum within 1..factor and never the factor", async () => {
    const { a } = await cluster(["--replication", "on"], ["b", "c"]);
    await call(a, "POST", "/v1/topics", { name: "t", partitions: 1 });
    const up = await call(a, "PATCH", "/v1/topics/t", { min_insync_replicas: 3 });
    expect(up.status).toBe(200);
    expect(up.json()).toMatchObject({ replication_factor: 3, min_insync_replicas: 3 });
    const over = await call(a, "PATCH", "/v1/topics/t", { min_insync_replicas: 4 });
    expect(over.json().code).toBe("invalid_min_insync_replicas");
    const same = await call(a, "PATCH", "/v1/topics/t", { replication_factor: 3, min_insync_replicas: 1 });
    expect(same.status).toBe(200);
    expect(same.json()).toMatchObject({ replication_factor: 3, min_insync_replicas: 1 });
    expect((await call(a, "PATCH", "/v1/topics/t", { replication_factor: 2 })).json().code).toBe(
      "replication_factor_immutable",
    );
    expect((await call(a, "GET", "/v1/topics/t")).json()).toMatchObject({
      replication_factor: 3,
      min_insync_replicas: 1,
    });
  });

  it("a fan-out child gets its own settings by the same rules, not its parent's", async () => {
    const { a } = await cluster(["--replication", "on"], ["b", "c"]);
    await call(a, "POST", "/v1/topics", { name: "parent", replication_factor: 2, retention_ms: 0 });
    const child = await call(a, "POST", "/v1/topics", { name: "child", parent: "parent" });
    expect(child.status).toBe(201);
    expect(child.json()).toMatchObject({ parent: "parent", replication_factor: 3, min_insync_replicas: 2 });
    const one = await call(a, "POST", "/v1/topics", {
      name: "child1",
      parent: "parent",
      replication_factor: 1,
    });
    expect(one.json()).toMatchObject({ parent: "parent", replication_factor: 1, min_insync_replicas: 1 });
  });

  it("shows a replicated partition's leader, replicas, ISR members and epoch; owner_node is the leader", async () => {
    const { tc, a } = await cluster(["--replication", "on"], ["b", "c"]);
    await call(a, "POST", "/v1/topics", { name: "t", partitions: 2 });
    tc.mc.setReplicaAssignment("t", 0, {
      partition: 0,
      leader: "a",
      replicas: ["a", "b", "c"],
      isr: [
        { member: "a", volumeId: "vol-a" },
        { member: "c", volumeId: "vol-c" },
      ],
      leaderEpoch: 6,
    });
    const p0 = (await call(a, "GET", "/v1/topics/t?partition=0")).json().partition_stats[0];
    expect(p0).toMatchObject({
      index: 0,
      owner_node: "a",
      leader: "a",
      replicas: ["a", "b", "c"],
      isr: ["a", "c"],
      leader_epoch: 6,
    });
    // Back to a single copy: no replica fields.
    tc.mc.setReplicaAssignment("t", 0, undefined);
    tc.mc.setOwner("t", 0, "a");
    const plain = (await call(a, "GET", "/v1/topics/t?partition=0")).json().partition_stats[0];
    for (const f of ["leader", "replicas", "isr", "leader_epoch"]) expect(plain).not.toHaveProperty(f);
    expect(plain.owner_node).toBe("a");
  });
});
