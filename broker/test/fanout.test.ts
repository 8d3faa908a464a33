// Fan-out and delay children against a real broker process: the API's
// contract (Narad v1's statuses), copying, the delay gate, re-attach
// without back-fill, and kill -9 mid-fan-out with every acknowledged parent
// record in the child at least once.

import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partitionForKey } from "../../packages/wire/src/partitioner.ts";
import { partitionDirName } from "../src/log/log-store.ts";
import { createTopic, highWatermarks, readAll, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const json = (url: string, method: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function produce(url: string, topic: string, id: string): Promise<number> {
  const res = await fetch(`${url}/v1/topics/${topic}/produce?key=${id}`, {
    method: "POST",
    body: JSON.stringify({ id }),
  });
  await res.arrayBuffer();
  return res.status;
}

const ids = (msgs: Array<{ payload: unknown }>) => msgs.map((m) => (m.payload as { id: string }).id);

describe("fan-out children (one broker)", () => {
  let b: RunningNarad;
  beforeAll(async () => {
    b = await startNarad();
  });
  afterAll(async () => {
    await b?.stop();
  });

  it("answers the link rules with Narad's statuses and shows role, children and parent", async () => {
    const u = b.url;
    for (const t of ["lp", "lc", "lspare", "lother"]) await createTopic(u, t, 3);
    const attach = (p: string, c: string, delay?: number) =>
      json(u, "POST", `/v1/topics/${p}/children`, {
        child: c,
        ...(delay === undefined ? {} : { delay_ms: delay }),
      });
    const ok = await attach("lp", "lc");
    expect(ok.status).toBe(200);
    const parent = (await ok.json()) as { role: string; children: string[] };
    expect(parent.role).toBe("parent");
    expect(parent.children).toEqual(["lc"]);
    const child = (await (await fetch(`${u}/v1/topics/lc`)).json()) as { role: string; parent: string };
    expect(child).toMatchObject({ role: "child", parent: "lp" });
    const cases: Array<[string, string, number]> = [
      ["ghost", "lspare", 404],
      ["lp", "ghost", 404],
      ["lspare", "lspare", 400],
      ["lc", "lspare", 409], // a child cannot have children
      ["lspare", "lp", 409], // a parent cannot be a child
      ["lother", "lc", 409], // a second parent
      ["lp", "lc", 409], // attached already
    ];
    for (const [p, c, status] of cases) {
      const res = await attach(p, c);
      const body = (await res.json()) as { error: string; code: string };
      expect({ p, c, status: res.status }).toEqual({ p, c, status });
      expect(body.error.length).toBeGreaterThan(0);
    }
    expect((await attach("lp", "lspare", -1)).status).toBe(400);
    expect((await attach("lp", "lspare", 366 * 86_400_000)).status).toBe(400);
    expect((await json(u, "DELETE", "/v1/topics/lp/children/lspare")).status).toBe(404);
    expect((await json(u, "DELETE", "/v1/topics/lp/children/lc")).status).toBe(204);
    const detached = (await (await fetch(`${u}/v1/topics/lc`)).json()) as { role: string; parent?: string };
    expect(detached.role).toBe("standalone");
    expect(detached.parent).toBeUndefined();
  });

  it("holds the delay rules: retention floor, no direct produce, retention patch", async () => {
    const u = b.url;
    expect(
      (await json(u, "POST", "/v1/topics", { name: "dp", partitions: 3, retention_ms: 7_200_000 })).status,
    ).toBe(201);
    await createTopic(u, "dc", 3);
    const attach = (delay: number) =>
      json(u, "POST", "/v1/topics/dp/children", { child: "dc", delay_ms: delay });
    expect((await attach(3_600_001)).status).toBe(400);
    expect((await attach(1500)).status).toBe(200);
    expect(await produce(u, "dc", "direct")).toBe(409);
    expect((await json(u, "PATCH", "/v1/topics/dp", { retention_ms: 3_600_000 })).status).toBe(400);
    expect((await json(u, "PATCH", "/v1/topics/dp", { retention_ms: 3_700_000 })).status).toBe(200);
    const list = (await (await fetch(`${u}/v1/topics/dp/children`)).json()) as {
      children: Array<{ name: string; delay_ms: number; lag_messages: number }>;
    };
    expect(list.children).toEqual([expect.objectContaining({ name: "dc", delay_ms: 1500 })]);
    expect((await json(u, "DELETE", "/v1/topics/dp/children/dc")).status).toBe(204);
    expect(await produce(u, "dc", "direct")).toBe(202);
  });

  it("gives a child its parent's schema, refuses a different one, and a child's own schema change", async () => {
    const u = b.url;
    const schema = { type: "object", required: ["id"], properties: { id: { type: "string" } } };
    await createTopic(u, "sp", 3);
    await createTopic(u, "sc", 3);
    await createTopic(u, "sd", 3);
    expect((await json(u, "PATCH", "/v1/topics/sp", { schema })).status).toBe(200);
    expect((await json(u, "PATCH", "/v1/topics/sd", { schema: { type: "object" } })).status).toBe(200);
    expect((await json(u, "POST", "/v1/topics/sp/children", { child: "sd" })).status).toBe(409);
    expect((await json(u, "POST", "/v1/topics/sp/children", { child: "sc" })).status).toBe(200);
    const bad = await fetch(`${u}/v1/topics/sc/produce`, { method: "POST", body: JSON.stringify({ x: 1 }) });
    expect(bad.status).toBe(400);
    expect((await json(u, "PATCH", "/v1/topics/sc", { schema })).status).toBe(409);
  });

  it("creates a child in one call with the parent's partition count; deleting the parent frees it", async () => {
    const u = b.url;
    await createTopic(u, "cp", 5);
    const res = await json(u, "POST", "/v1/topics", { name: "cc", parent: "cp" });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ partitions: 5, role: "child", parent: "cp" });
    expect((await json(u, "POST", "/v1/topics", { name: "x1", parent: "ghost" })).status).toBe(404);
    expect((await json(u, "POST", "/v1/topics", { name: "x2", fanout_delay_ms: 1000 })).status).toBe(400);
    expect((await json(u, "POST", "/v1/topics", { name: "x3", parent: "x3" })).status).toBe(400);
    expect(
      (await json(u, "POST", "/v1/topics", { name: "x4", parent: "cp", fanout_delay_ms: -1 })).status,
    ).toBe(400);
    expect((await json(u, "DELETE", "/v1/topics/cp")).status).toBe(204);
    expect(await (await fetch(`${u}/v1/topics/cc`)).json()).toMatchObject({ role: "standalone" });
  });

  it("reports lag complete (0) for a parent with nothing committed yet, as Narad's anchored cursors do", async () => {
    // Narad's own e2e suite waits for lag_complete right after the attach,
    // before producing; here a cursor of an empty partition never started.
    const u = b.url;
    await createTopic(u, "ep", 3);
    await createTopic(u, "ec", 3);
    expect((await json(u, "POST", "/v1/topics/ep/children", { child: "ec" })).status).toBe(200);
    const listing = await waitFor("lag complete on an empty parent", 10_000, async () => {
      const l = (await (await fetch(`${u}/v1/topics/ep/children`)).json()) as {
        children: Array<{ lag_messages: number; lag_complete: boolean }>;
      };
      return l.children[0]?.lag_complete ? l.children[0] : undefined;
    });
    expect(listing.lag_messages).toBe(0);
    for (let i = 0; i < 10; i++) expect(await produce(u, "ep", `e-${i}`)).toBe(202);
    const got = await waitFor("copied after the first commit", 20_000, async () => {
      const r = await readAll(u, "ec");
      return r.length >= 10 ? r : undefined;
    });
    expect(ids(got).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `e-${i}`).sort());
  });

  it("copies every record committed after the attach, keyed into the child's partition, and none from before", async () => {
    const u = b.url;
    await createTopic(u, "fp", 4);
    await createTopic(u, "fc", 3);
    for (let i = 0; i < 20; i++) expect(await produce(u, "fp", `before-${i}`)).toBe(202);
    await waitFor("pre-attach records committed", 10_000, async () =>
      (await highWatermarks(u, "fp")).reduce((a, c) => a + c, 0) === 20 ? true : undefined,
    );
    expect((await json(u, "POST", "/v1/topics/fp/children", { child: "fc" })).status).toBe(200);
    const sent: string[] = [];
    for (let i = 0; i < 300; i++) {
      expect(await produce(u, "fp", `after-${i}`)).toBe(202);
      sent.push(`after-${i}`);
    }
    const copied = await waitFor("all copied", 20_000, async () => {
      const got = await readAll(u, "fc");
      return got.length >= sent.length ? got : undefined;
    });
    expect(ids(copied).sort()).toEqual([...sent].sort());
    for (const m of copied) expect(m.partition).toBe(partitionForKey(Buffer.from(m.key), 3));
    const lag = await waitFor("lag drained", 10_000, async () => {
      const l = (await (await fetch(`${u}/v1/topics/fp/children`)).json()) as {
        children: Array<{ lag_messages: number; lag_complete: boolean }>;
      };
      const c = l.children[0];
      return c?.lag_complete && c.lag_messages === 0 ? c : undefined;
    });
    expect(lag.lag_messages).toBe(0);
    const metrics = await (await fetch(`${u}/metrics`)).text();
    expect(metrics).toMatch(/narad_fanout_lag_messages\{parent="fp",partition="0",child="fc"\} 0/);

    // Detach, produce, re-attach: a new epoch starts at the tail (no back-fill).
    expect((await json(u, "DELETE", "/v1/topics/fp/children/fc")).status).toBe(204);
    for (let i = 0; i < 10; i++) expect(await produce(u, "fp", `detached-${i}`)).toBe(202);
    await waitFor("detached records committed", 10_000, async () =>
      (await highWatermarks(u, "fp")).reduce((a, c) => a + c, 0) === 330 ? true : undefined,
    );
    expect((await json(u, "POST", "/v1/topics/fp/children", { child: "fc" })).status).toBe(200);
    for (let i = 0; i < 10; i++) expect(await produce(u, "fp", `again-${i}`)).toBe(202);
    const all = await waitFor("re-attached records copied", 20_000, async () => {
      const got = await readAll(u, "fc");
      return got.length >= 310 ? got : undefined;
    });
    const names = ids(all);
    expect(names.filter((n) => n.startsWith("again-"))).toHaveLength(10);
    expect(names.filter((n) => n.startsWith("detached-") || n.startsWith("before-"))).toEqual([]);
  });

  it("routes copies by the child's current partition count after the child grows", async () => {
    const u = b.url;
    await createTopic(u, "gp", 2);
    await createTopic(u, "gc", 2);
    expect((await json(u, "POST", "/v1/topics/gp/children", { child: "gc" })).status).toBe(200);
    for (let i = 0; i < 20; i++) expect(await produce(u, "gp", `g1-${i}`)).toBe(202);
    await waitFor("first copies", 20_000, async () =>
      (await readAll(u, "gc")).length >= 20 ? true : undefined,
    );
    expect((await json(u, "PATCH", "/v1/topics/gc", { partitions: 5 })).status).toBe(200);
    for (let i = 0; i < 40; i++) expect(await produce(u, "gp", `g2-${i}`)).toBe(202);
    const got = await waitFor("copies after the growth", 20_000, async () => {
      const g = await readAll(u, "gc");
      return g.length >= 60 ? g : undefined;
    });
    // As a produce to the grown child would place them: the child's partitioner over 5 partitions.
    for (const m of got.filter((r) => (r.payload as { id: string }).id.startsWith("g2-")))
      expect({ key: m.key, partition: m.partition }).toEqual({
        key: m.key,
        partition: partitionForKey(Buffer.from(m.key), 5),
      });
  });

  it("delivers a delay child's records no earlier than commit + delay", async () => {
    const u = b.url;
    await createTopic(u, "yp", 3);
    await createTopic(u, "yc", 3);
    const delay = 1500;
    expect((await json(u, "POST", "/v1/topics/yp/children", { child: "yc", delay_ms: delay })).status).toBe(
      200,
    );
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) expect(await produce(u, "yp", `late-${i}`)).toBe(202);
    await new Promise((r) => setTimeout(r, 700));
    expect(await readAll(u, "yc")).toEqual([]);
    const got = await waitFor("delayed records", 15_000, async () => {
      const g = await readAll(u, "yc");
      return g.length >= 5 ? g : undefined;
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(delay);
    expect(ids(got).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `late-${i}`));
  });
});

describe("fan-out across kill -9", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("copies every acknowledged parent record into the child at least once over 4 kill -9 rounds", async () => {
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    await createTopic(broker.url, "kp", 4);
    await createTopic(broker.url, "kc", 3);
    expect((await json(broker.url, "POST", "/v1/topics/kp/children", { child: "kc" })).status).toBe(200);
    const acked = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const stop = { now: false };
      const url = broker.url;
      const workers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; !stop.now; i++) {
          const id = `r${round}-w${w}-${i}`;
          try {
            if ((await produce(url, "kp", id)) === 202) acked.add(id);
          } catch {
            return; // the process died under this request: never acknowledged
          }
        }
      });
      await new Promise((r) => setTimeout(r, 400 + Math.random() * 800));
      await broker.kill9();
      stop.now = true;
      await Promise.all(workers);
      broker = await startNarad({ dataDir, keepData: true });
    }
    const u = broker.url;
    const child = await waitFor("every acknowledged record in the child", 60_000, async () => {
      const got = new Set(ids(await readAll(u, "kc")));
      return [...acked].every((id) => got.has(id)) ? got : undefined;
    }).catch(() => undefined);
    const seen = child ?? new Set(ids(await readAll(u, "kc")));
    const missing = [...acked].filter((id) => !seen.has(id));
    const childTotal = (await highWatermarks(u, "kc")).reduce((a, c) => a + c, 0);
    console.log(
      `fan-out crash test: acked=${acked.size} child records=${childTotal} distinct=${seen.size} missing=${missing.length}`,
    );
    expect(acked.size).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });
});

describe("fan-out cursor files damaged across kill -9", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("torn, missing, corrupt or past-the-end cursor files re-copy (duplicates), never skip an acknowledged record", async () => {
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    await createTopic(broker.url, "tp", 4);
    await createTopic(broker.url, "tc", 2);
    expect((await json(broker.url, "POST", "/v1/topics/tp/children", { child: "tc" })).status).toBe(200);
    const acked: string[] = [];
    for (let i = 0; i < 200; i++)
      if ((await produce(broker.url, "tp", `before-${i}`)) === 202) acked.push(`before-${i}`);
    await waitFor("copied before the crash", 20_000, async () =>
      (await readAll(broker!.url, "tc")).length >= acked.length ? true : undefined,
    );
    await broker.kill9();
    // One damage per parent partition: torn, missing, garbage, and a position past the log's end
    // (the file of the current epoch, as after a partition log restored shorter than the cursor saw it).
    const file = (p: number) => join(dataDir!, "topics", "tp", partitionDirName(p), "fanout-tc.offset");
    const epochOf = JSON.parse(readFileSync(file(3), "utf8")) as { epoch: string };
    writeFileSync(file(0), readFileSync(file(0), "utf8").slice(0, 9));
    rmSync(file(1));
    writeFileSync(file(2), "\u0000\u0000garbage");
    writeFileSync(file(3), JSON.stringify({ epoch: epochOf.epoch, next_offset: 1_000_000 }));
    expect(readdirSync(join(dataDir, "topics", "tp", partitionDirName(0)))).toContain("fanout-tc.offset");
    broker = await startNarad({ dataDir, keepData: true });
    const u = broker.url;
    for (let i = 0; i < 200; i++)
      if ((await produce(u, "tp", `after-${i}`)) === 202) acked.push(`after-${i}`);
    const seen = await waitFor("every acknowledged record in the child", 30_000, async () => {
      const got = new Set(ids(await readAll(u, "tc")));
      return acked.every((id) => got.has(id)) ? got : undefined;
    }).catch(async () => new Set(ids(await readAll(u, "tc"))));
    const missing = acked.filter((id) => !seen.has(id));
    const childTotal = (await highWatermarks(u, "tc")).reduce((a, c) => a + c, 0);
    console.log(
      `damaged cursor files: acked=${acked.length} child records=${childTotal} missing=${missing.length}`,
    );
    expect(missing).toEqual([]);
  });
});
