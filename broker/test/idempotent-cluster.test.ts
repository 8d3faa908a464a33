// Idempotent producers across ingress nodes: three in-process brokers sharing
// an in-memory metastore and one producer-registry store (the setup of
// cluster.test.ts). Batches of one producer reordered through two ingress
// nodes are refused or answered, never acknowledged and dropped; a retry
// through another node gets the original offsets; a zombie writing through a
// node that never saw the newer epoch in a produce request is fenced.

import { afterEach, describe, expect, it } from "vitest";
import type { RunningBroker } from "../src/node.ts";
import { memoryRegistryStore } from "../src/producers/registry.ts";
import { testClusters } from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, { prefix: "narad-idem" });

async function call(
  b: RunningBroker,
  url: string,
  body: string | object,
  headers: Record<string, string> = {},
) {
  const res = await b.app.inject({
    method: "POST",
    url,
    payload: typeof body === "object" ? JSON.stringify(body) : body,
    headers: typeof body === "object" ? { "content-type": "application/json", ...headers } : headers,
  });
  return { status: res.statusCode, json: () => JSON.parse(res.body) };
}

const batchBody = (ids: string[]) =>
  ids.map((id) => JSON.stringify({ partition: 0, payload: { id } })).join("\n");

async function batch(b: RunningBroker, ids: string[], p: { id: string; epoch: number }, seq: number) {
  return call(b, "/v1/topics/r/produce-batch?acks=all", batchBody(ids), {
    "content-type": "application/x-ndjson",
    "narad-producer-id": p.id,
    "narad-producer-epoch": String(p.epoch),
    "narad-producer-seq": String(seq),
  });
}

describe("idempotent producer through several ingress nodes", () => {
  it("reordered batches through two nodes, a retry through a third, a zombie through a node that never saw the new epoch", async () => {
    const tc = clusters.create();
    const { mc } = tc;
    // One registry store for all three, as brokers share the ConfigMap.
    const registry = memoryRegistryStore();
    const [a, b, c] = (await tc.startAll(["a", "b", "c"], { producerRegistryStore: registry })).map(
      (n) => n.broker,
    );
    expect((await call(a!, "/v1/topics", { name: "r", partitions: 1 })).status).toBe(201);
    mc.setOwner("r", 0, "a");
    const init = (await call(b!, "/v1/producers", { name: "app" })).json() as {
      producer_id: string;
      epoch: number;
    };
    const p = { id: init.producer_id, epoch: init.epoch };
    const k0 = Array.from({ length: 1000 }, (_, i) => `k0-${i}`);
    const k1 = Array.from({ length: 1000 }, (_, i) => `k1-${i}`);
    const acked = new Set<string>();
    const note = (ids: string[], r: { status: number }) => {
      if (r.status === 200) for (const id of ids) acked.add(id);
    };

    // Batch k+1 through c, batch k through b, at the same time.
    const [r1, r0] = await Promise.all([batch(c!, k1, p, 1000), batch(b!, k0, p, 0)]);
    note(k1, r1);
    note(k0, r0);
    // Whichever order the owner saw them in: no 200 for a record it did not store.
    if (r1.status !== 200) {
      expect(r1.json().code).toBe("out_of_order_sequence");
      const again = await batch(c!, k1, p, 1000);
      note(k1, again);
      expect(again.status).toBe(200);
    }
    expect(r0.status).toBe(200);
    // An exact retry of batch k through the third node: the original offsets.
    const retry = await batch(a!, k0, p, 0);
    expect(retry.json()).toEqual(r0.json());

    // A new instance of "app" via a; the old one writes through c, which never saw the new epoch produce.
    const next = (await call(a!, "/v1/producers", { name: "app" })).json() as {
      producer_id: string;
      epoch: number;
    };
    expect(next.epoch).toBe(p.epoch + 1);
    const zombie = await batch(c!, ["z0"], p, 2000);
    note(["z0"], zombie);
    expect(zombie.status).toBe(409);
    expect(zombie.json().code).toBe("producer_fenced");

    // Ledger: every acknowledged record stored exactly once.
    await new Promise((r) => setTimeout(r, 200));
    const read = await a!.app.inject({
      method: "GET",
      url: "/v1/topics/r/records?partition=0&offset=0&limit=1000",
    });
    const read2 = await a!.app.inject({
      method: "GET",
      url: "/v1/topics/r/records?partition=0&offset=1000&limit=1000",
    });
    const stored = [...JSON.parse(read.body).records, ...JSON.parse(read2.body).records].map(
      (m: { payload: { id: string } }) => m.payload.id,
    );
    expect(new Set(stored).size).toBe(stored.length);
    for (const id of acked) expect(stored).toContain(id);
    expect(stored.length).toBe(2000);
  });
});
