// Narad (Go) parity against the real broker process: the settings Narad
// exposes, read from Narad's own variable names; partition stats with
// oldest_segment_at and owner_node as the node id; the cluster API on one
// node, with authentication on.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const nodeId = "parity-node";

interface Stats {
  index: number;
  segments: number;
  high_watermark: number;
  oldest_segment_at?: number;
  owner_node: string;
}

async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("Narad parity (real process)", () => {
  let broker: RunningNarad;
  beforeAll(async () => {
    broker = await startNarad({
      args: ["--node-id", nodeId],
      // Narad's names for the settings (a Narad deployment's environment).
      env: {
        NARAD_TOPIC_DEFAULT_PARTITIONS: "4",
        NARAD_TOPIC_MAX_PARTITIONS: "6",
        NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS: "7200000",
        NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS: "9000",
        NARAD_HTTP_MAX_CONSUME_WAIT: "300ms",
      },
    });
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it("applies the topic defaults and the partition cap from the settings", async () => {
    const created = await post(`${broker.url}/v1/topics`, { name: "defaults" });
    expect(created.status).toBe(201);
    expect(await json(created)).toMatchObject({
      partitions: 4,
      retention_ms: 7_200_000,
      visibility_timeout_ms: 9000,
    });
    const over = await post(`${broker.url}/v1/topics`, { name: "too-wide", partitions: 7 });
    expect(over.status).toBe(400);
    expect(await json(over)).toEqual({ error: "partitions must be between 1 and 6", code: "bad_request" });
    const grow = await fetch(`${broker.url}/v1/topics/defaults`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ partitions: 7 }),
    });
    expect(grow.status).toBe(400);
  });

  it("cuts a long consume wait to the max consume wait", async () => {
    const t0 = Date.now();
    const res = await fetch(`${broker.url}/v1/topics/defaults/consume?wait=10s`);
    expect(res.status).toBe(204);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(5000);
  });

  it("partition stats name the owner by node id and date the oldest segment once it holds a record", async () => {
    const before = await json<{ partition_stats: Stats[] }>(await fetch(`${broker.url}/v1/topics/defaults`));
    expect(before.partition_stats).toHaveLength(4);
    for (const p of before.partition_stats) {
      expect(p.owner_node).toBe(nodeId);
      // An empty partition has its (empty) active segment, opened or not.
      expect(p.segments).toBe(1);
      expect(p).not.toHaveProperty("oldest_segment_at");
    }
    const nowS = Math.floor(Date.now() / 1000);
    const produced = await fetch(`${broker.url}/v1/topics/defaults/produce?partition=2`, {
      method: "POST",
      body: '{"n":1}',
    });
    expect(produced.status).toBe(202);
    const p2 = await waitFor("partition 2 visible", 10_000, async () => {
      const info = await json<{ partition_stats: Stats[] }>(
        await fetch(`${broker.url}/v1/topics/defaults?partition=2`),
      );
      const s = info.partition_stats[0];
      return s !== undefined && s.high_watermark === 1 ? s : undefined;
    });
    expect(p2.index).toBe(2);
    expect(p2.oldest_segment_at).toBeGreaterThanOrEqual(nowS - 1);
    expect(p2.oldest_segment_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
  });
});

describe("cluster API on one node (real process, auth on)", () => {
  let broker: RunningNarad;
  let dir: string;
  const basic = (user: string, password: string) => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
  });
  const admin = basic("admin", "admin-secret");
  const reader = basic("reader", "reader-secret");
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "narad-parity-auth-"));
    const users = {
      users: [
        { name: "admin", password: "admin-secret" },
        { name: "reader", password: "reader-secret", grants: [{ action: "consume", topics: "*" }] },
      ],
    };
    writeFileSync(join(dir, "users.json"), JSON.stringify(users));
    broker = await startNarad({
      args: ["--node-id", nodeId, "--auth", "on", "--auth-file", join(dir, "users.json")],
    });
    const created = await fetch(`${broker.url}/v1/topics`, {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ name: "orders", partitions: 5 }),
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the one member with everything it owns, and no moves; any authenticated user may read", async () => {
    expect((await fetch(`${broker.url}/v1/cluster/members`)).status).toBe(401);
    const res = await fetch(`${broker.url}/v1/cluster/members`, { headers: reader });
    expect(res.status).toBe(200);
    const body = await json<{ members: Array<Record<string, unknown>> }>(res);
    expect(body.members).toEqual([
      {
        id: nodeId,
        addr: expect.any(String),
        status: "alive",
        state: "Active",
        draining: false,
        owned_partitions: 5,
        outbound_moves: 0,
      },
    ]);
    const moves = await fetch(`${broker.url}/v1/cluster/moves`, { headers: reader });
    expect(moves.status).toBe(200);
    expect(await json(moves)).toEqual({ moves: [] });
  });

  it("answers a decommission: admin only, 404 for a stranger, 409 nothing to decommission on one node", async () => {
    const path = `${broker.url}/v1/cluster/members/${nodeId}/decommission`;
    expect((await fetch(path, { method: "POST" })).status).toBe(401);
    const byReader = await fetch(path, { method: "POST", headers: reader });
    expect(byReader.status).toBe(403);
    await byReader.arrayBuffer();
    const self = await fetch(path, { method: "POST", headers: admin });
    expect(self.status).toBe(409);
    expect((await json<{ error: string }>(self)).error).toMatch(/nothing to decommission/);
    const cancel = await fetch(path, { method: "DELETE", headers: admin });
    expect(cancel.status).toBe(204);
    const ghost = await fetch(`${broker.url}/v1/cluster/members/ghost/decommission`, {
      method: "POST",
      headers: admin,
    });
    expect(ghost.status).toBe(404);
    expect(await json(ghost)).toEqual({ error: 'member "ghost" not found', code: "not_found" });
    const wrongMethod = await fetch(path, { method: "GET", headers: admin });
    expect(wrongMethod.status).toBe(405);
    await wrongMethod.arrayBuffer();
    // Nothing changed: the member is still serving, not draining.
    const after = await json<{ members: Array<{ draining: boolean }> }>(
      await fetch(`${broker.url}/v1/cluster/members`, { headers: admin }),
    );
    expect(after.members[0]?.draining).toBe(false);
  });
});
