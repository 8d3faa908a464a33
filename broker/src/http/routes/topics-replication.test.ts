// Replication settings through the /v1 topic routes on a single node (file
// metastore, one broker): the defaults, the gate, the refusals with their
// codes, PATCH's rules. The cluster cases (defaults by size, partition
// records) are in broker/test/topic-replication.test.ts.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../config.ts";
import { type RunningBroker, startBroker } from "../../node.ts";

let dir: string | undefined;
let broker: RunningBroker | undefined;

async function start(args: string[] = []): Promise<RunningBroker> {
  dir = mkdtempSync(join(tmpdir(), "narad-topic-repl-"));
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0", ...args], {}, "node-a");
  broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
  return broker;
}

afterEach(async () => {
  await broker?.shutdown();
  broker = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function call(b: RunningBroker, method: "GET" | "POST" | "PATCH", url: string, body?: unknown) {
  const res = await b.app.inject({
    method,
    url,
    ...(body === undefined
      ? {}
      : { payload: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.statusCode, json: () => JSON.parse(res.body) };
}

describe("topic replication settings on a single node", () => {
  it("shows one copy for every topic, in the create answer, the list and the topic", async () => {
    const b = await start();
    const created = await call(b, "POST", "/v1/topics", { name: "t", partitions: 2 });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ replication_factor: 1, min_insync_replicas: 1 });
    expect((await call(b, "GET", "/v1/topics")).json().topics[0]).toMatchObject({
      replication_factor: 1,
      min_insync_replicas: 1,
    });
    const info = (await call(b, "GET", "/v1/topics/t")).json();
    expect(info).toMatchObject({ replication_factor: 1, min_insync_replicas: 1 });
    // Single-copy partitions carry no replica fields; the owner is this node.
    expect(info.partition_stats[0].owner_node).toBe("node-a");
    for (const f of ["leader", "replicas", "isr", "leader_epoch"])
      expect(info.partition_stats[0]).not.toHaveProperty(f);
    // Explicit values that mean one copy are fine.
    expect(
      (await call(b, "POST", "/v1/topics", { name: "u", replication_factor: 1, min_insync_replicas: 1 }))
        .status,
    ).toBe(201);
  });

  it("gate off: a factor above 1 is 400 replication_not_enabled saying how to enable it; nothing is created", async () => {
    const b = await start(["--replication", "off"]);
    const r = await call(b, "POST", "/v1/topics", { name: "r", replication_factor: 3 });
    expect(r.status).toBe(400);
    expect(r.json().code).toBe("replication_not_enabled");
    expect(r.json().error).toMatch(/--replication on/);
    expect((await call(b, "GET", "/v1/topics/r")).status).toBe(404);
  });

  it.each([
    [{ replication_factor: 0 }, "invalid_replication_factor"],
    [{ replication_factor: 6 }, "invalid_replication_factor"],
    [{ replication_factor: "3" }, "invalid_replication_factor"],
    [{ replication_factor: 1.5 }, "invalid_replication_factor"],
    [{ min_insync_replicas: 0 }, "invalid_min_insync_replicas"],
    [{ min_insync_replicas: 2 }, "invalid_min_insync_replicas"],
    [{ replication_factor: 1, min_insync_replicas: 2 }, "invalid_min_insync_replicas"],
  ])("refuses %j with 400 %s whatever the gate", async (fields, code) => {
    for (const gate of ["off", "on"]) {
      const b = await start(["--replication", gate]);
      const r = await call(b, "POST", "/v1/topics", { name: "x", ...fields });
      expect(r.status, gate).toBe(400);
      expect(r.json().code, gate).toBe(code);
      expect(typeof r.json().error).toBe("string");
      expect((await call(b, "GET", "/v1/topics")).json().topics).toEqual([]);
      await broker?.shutdown();
      broker = undefined;
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    }
  });

  it("gate on, one broker: one copy by default, and a factor above 1 is 400 replication_factor_above_brokers", async () => {
    const b = await start(["--replication", "on"]);
    expect((await call(b, "POST", "/v1/topics", { name: "t" })).json()).toMatchObject({
      replication_factor: 1,
      min_insync_replicas: 1,
    });
    const r = await call(b, "POST", "/v1/topics", { name: "r", replication_factor: 2 });
    expect(r.status).toBe(400);
    expect(r.json().code).toBe("replication_factor_above_brokers");
  });

  it("PATCH: the same factor is a no-op, another is 400 replication_factor_immutable, the minimum stays within the factor", async () => {
    const b = await start();
    await call(b, "POST", "/v1/topics", { name: "t", retention_ms: 5000 });
    const same = await call(b, "PATCH", "/v1/topics/t", { replication_factor: 1 });
    expect(same.status).toBe(200);
    expect(same.json()).toMatchObject({ replication_factor: 1, retention_ms: 5000 });
    const other = await call(b, "PATCH", "/v1/topics/t", { replication_factor: 3, retention_ms: 9000 });
    expect(other.status).toBe(400);
    expect(other.json().code).toBe("replication_factor_immutable");
    // Refused whole: the other field of the patch did not apply either.
    expect((await call(b, "GET", "/v1/topics/t")).json().retention_ms).toBe(5000);
    const min = await call(b, "PATCH", "/v1/topics/t", { min_insync_replicas: 2 });
    expect(min.status).toBe(400);
    expect(min.json().code).toBe("invalid_min_insync_replicas");
    expect((await call(b, "PATCH", "/v1/topics/t", { min_insync_replicas: 1 })).status).toBe(200);
    // An empty patch is still 400 (Narad parity).
    expect((await call(b, "PATCH", "/v1/topics/t", {})).status).toBe(400);
  });
});

describe("--replication", () => {
  it("defaults to on and reads on|off from the flag, NARAD_REPLICATION or the config file", () => {
    expect(loadConfig([], {}, "h").replication).toBe("on");
    expect(loadConfig(["--replication", "off"], {}, "h").replication).toBe("off");
    expect(loadConfig([], { NARAD_REPLICATION: "off" }, "h").replication).toBe("off");
    expect(loadConfig(["--replication", "on"], { NARAD_REPLICATION: "off" }, "h").replication).toBe("on");
    expect(() => loadConfig(["--replication", "yes"], {}, "h")).toThrow(/--replication must be on or off/);
  });
});
