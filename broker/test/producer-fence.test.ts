// Fencing across brokers (docs/idempotent-producer.md#fencing-across-brokers,
// docs/adr/0008-producer-fence-lease.md): two in-process brokers share one
// producer-registry store, and one broker's watch of it is held back (a
// ConfigMap watch that has not delivered a bump made through the other
// broker, or has stopped). After the new instance's init answered, the
// zombie's records are refused through the stale broker, as ingress and as
// partition owner:
//   - the barrier's confirmation reached the stale broker: fenced at once;
//   - the stale broker did not answer the confirmation: the init waited out
//     the lease, and the stale broker's next decision re-read the store;
//   - the stale broker is the owner, the record passed ingress before the
//     bump and reaches the owner after it: fenced there (lease re-read);
//   - the stale broker cannot read the store once its lease ran out: 503
//     producer_registry_stale, nothing stored.
// Before the lease and the barrier, each of the first three was a 200.

import { afterEach, describe, expect, it } from "vitest";
import { readFailureHoldMs } from "../src/core/producer-fence.ts";
import type { RunningBroker, StartBrokerOptions } from "../src/node.ts";
import { memoryRegistryStore } from "../src/producers/registry.ts";
import type { PbCommitBatchRequest } from "../src/rpc/proto.ts";
import { laggingRegistryStore } from "./harness/registry-store.ts";
import { testClusters, testPeerPool } from "./harness/test-cluster.ts";

const leaseMs = 600;
// A short fence lease (the tests wait it out) and a dispatcher that polls and
// retries fast (a held lane is released within the tests' short waits).
const clusters = testClusters(afterEach, {
  prefix: "narad-fence",
  config: { producerFenceLeaseMs: leaseMs },
  dispatch: { errorBackoffMs: 50, idlePollMs: 10 },
});

async function call(b: RunningBroker, url: string, body: object, headers: Record<string, string> = {}) {
  const res = await b.app.inject({
    method: "POST",
    url,
    payload: JSON.stringify(body),
    headers: { "content-type": "application/json", ...headers },
  });
  return {
    status: res.statusCode,
    headers: res.headers,
    body: res.body,
    json: () => JSON.parse(res.body) as Record<string, unknown>,
  };
}

type Identity = { producer_id: string; epoch: number };

async function init(b: RunningBroker, name: string): Promise<Identity> {
  const r = await call(b, "/v1/producers", { name });
  expect(r.status, r.body).toBe(201);
  return r.json() as unknown as Identity;
}

const produce = (b: RunningBroker, p: Identity, partition: number, seq: number) =>
  call(
    b,
    `/v1/topics/r/produce?acks=all&partition=${partition}`,
    { seq },
    {
      "narad-producer-id": p.producer_id,
      "narad-producer-epoch": String(p.epoch),
      "narad-producer-seq": String(seq),
    },
  );

async function logEnd(b: RunningBroker, partition: number): Promise<number> {
  const res = await b.app.inject({ method: "GET", url: "/v1/topics/r" });
  const stats = (JSON.parse(res.body) as { partition_stats: Array<{ index: number; next_offset: number }> })
    .partition_stats;
  return stats.find((s) => s.index === partition)!.next_offset;
}

async function metric(b: RunningBroker, line: string): Promise<number> {
  const res = await b.app.inject({ method: "GET", url: "/metrics" });
  const hit = res.body.split("\n").find((l) => l.startsWith(`${line} `));
  return hit === undefined ? 0 : Number(hit.slice(line.length + 1));
}

/** Two brokers on one registry; b's watch is held from the start. p0 is a's, p1 is b's. */
async function twoBrokers(
  hooks: { a?: StartBrokerOptions["testHooks"]; b?: StartBrokerOptions["testHooks"] } = {},
) {
  const tc = clusters.create();
  const { mc } = tc;
  const shared = memoryRegistryStore();
  const aStore = laggingRegistryStore(shared);
  const bStore = laggingRegistryStore(shared);
  const a = (
    await tc.start("a", { producerRegistryStore: aStore, ...(hooks.a ? { testHooks: hooks.a } : {}) })
  ).broker;
  const b = (
    await tc.start("b", { producerRegistryStore: bStore, ...(hooks.b ? { testHooks: hooks.b } : {}) })
  ).broker;
  expect((await call(a, "/v1/topics", { name: "r", partitions: 2 })).status).toBe(201);
  mc.setOwner("r", 0, "a");
  mc.setOwner("r", 1, "b");
  return { mc, a, b, aStore, bStore };
}

describe("fencing across brokers with a lagging registry watch", () => {
  it("the barrier's confirmation reaches the stale broker: the zombie is fenced there at once", async () => {
    const { a, b, bStore } = await twoBrokers();
    const zombie = await init(b, "app");
    expect((await produce(b, zombie, 1, 0)).status).toBe(200);
    bStore.holdWatch();
    const current = await init(a, "app");
    expect(current).toEqual({ producer_id: zombie.producer_id, epoch: zombie.epoch + 1 });
    // b's watch never delivered the bump, and b read nothing since: b learnt it from a's barrier.
    const z = await produce(b, zombie, 1, 1);
    expect(z.status, z.body).toBe(409);
    expect(z.json().code).toBe("producer_fenced");
    expect(await logEnd(b, 1)).toBe(1);
    // The new instance is accepted through the same broker.
    const ok = await produce(b, current, 1, 0);
    expect(ok.status, ok.body).toBe(200);
    expect(await metric(a, 'narad_producer_fence_barrier_total{outcome="confirmed"}')).toBe(1);
  });

  it("the stale broker does not answer the confirmation: the init waits out the lease, then the stale broker re-reads", async () => {
    const { a, b, bStore } = await twoBrokers();
    const zombie = await init(b, "app");
    expect((await produce(b, zombie, 1, 0)).status).toBe(200);
    bStore.holdWatch();
    b.cluster!.kill(); // a's ConfirmProducerEpoch cannot reach b
    const started = performance.now();
    const current = await init(a, "app");
    const waited = performance.now() - started;
    expect(current.epoch).toBe(zombie.epoch + 1);
    const loadsBefore = bStore.loads();
    // As ingress and as the owner of partition 1.
    const z = await produce(b, zombie, 1, 1);
    expect(z.status, z.body).toBe(409);
    expect(z.json().code).toBe("producer_fenced");
    expect(waited).toBeGreaterThanOrEqual(leaseMs);
    expect(bStore.loads()).toBeGreaterThan(loadsBefore);
    expect(await logEnd(b, 1)).toBe(1);
    expect(await metric(a, 'narad_producer_fence_barrier_total{outcome="lease"}')).toBe(1);
  });

  it("the stale broker is the owner: a record that passed ingress before the bump is fenced when it reaches the owner after it", async () => {
    let arrived: () => void = () => {};
    const reached = new Promise<void>((r) => {
      arrived = r;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((r) => {
      release = r;
    });
    const { a, b, aStore } = await twoBrokers({
      a: {
        server: {
          beforeCommit: async (req: PbCommitBatchRequest) => {
            if (!req.records.some((r) => r.producer)) return;
            arrived();
            await released;
          },
          // a does not confirm: the barrier falls back to the lease.
          beforeConfirmProducerEpoch: async () => {
            throw new Error("test: confirmation lost");
          },
        },
      },
    });
    aStore.holdWatch();
    const zombie = await init(b, "app");
    // Through b (its view is current), for partition 0 (a's): accepted at ingress, held at a's door.
    const pending = produce(b, zombie, 0, 0);
    await reached;
    const current = await init(b, "app");
    expect(current.epoch).toBe(zombie.epoch + 1);
    release();
    const z = await pending;
    expect(z.status, z.body).toBe(409);
    expect(z.json().code).toBe("producer_fenced");
    expect(await logEnd(a, 0)).toBe(0);
    const ok = await produce(b, current, 0, 0);
    expect(ok.status, ok.body).toBe(200);
  });

  it("the store cannot be read once the lease ran out: 503 producer_registry_stale with Retry-After, nothing stored", async () => {
    const { b, bStore } = await twoBrokers();
    const p = await init(b, "app");
    expect((await produce(b, p, 1, 0)).status).toBe(200);
    bStore.failReads(true);
    await new Promise((r) => setTimeout(r, leaseMs + 100));
    const tFailedRead = Date.now(); // the failed read below happens after this
    const r = await produce(b, p, 1, 1);
    expect(r.status, r.body).toBe(503);
    expect(r.json().code).toBe("producer_registry_stale");
    expect(r.headers["retry-after"]).toBeDefined();
    expect(await logEnd(b, 1)).toBe(1);
    expect(await metric(b, 'narad_produce_rejected_total{reason="producer_registry_stale"}')).toBe(1);
    // A plain produce does not depend on the registry.
    const plain = await call(b, "/v1/topics/r/produce?acks=all&partition=1", { plain: true });
    expect(plain.status, plain.body).toBe(200);
    // Requests right after a failed read are refused without reading again (the store is failing):
    // at most one read per hold window. On a quiet machine all five fall in the first window (no
    // read at all); on a loaded one the window can pass meanwhile, and one read per window is
    // what the rule allows.
    const loads = bStore.loads();
    for (let i = 0; i < 5; i++) expect((await produce(b, p, 1, 1)).status).toBe(503);
    const windows = Math.floor((Date.now() - tFailedRead) / readFailureHoldMs(leaseMs));
    expect(bStore.loads() - loads).toBeLessThanOrEqual(windows);
    bStore.failReads(false);
    await new Promise((r) => setTimeout(r, readFailureHoldMs(leaseMs) + 20));
    const again = await produce(b, p, 1, 1);
    expect(again.status, again.body).toBe(200);
  });
});

describe("the owner cannot read the store once its lease ran out", () => {
  it("holds the partition's lane, plain records behind the stamped one too, and commits all of them once it can read", async () => {
    const { a, b, bStore } = await twoBrokers();
    const p = await init(a, "app");
    expect((await produce(a, p, 1, 0)).status).toBe(200);
    bStore.failReads(true);
    await new Promise((r) => setTimeout(r, leaseMs + 100));
    // Through a (its store is readable): into a's WAL, for b's partition 1.
    const stamped = produce(a, p, 1, 1);
    await new Promise((r) => setTimeout(r, 50));
    const plain = await call(a, "/v1/topics/r/produce?partition=1", { plain: true });
    expect(plain.status, plain.body).toBe(202);
    await new Promise((r) => setTimeout(r, 300));
    // Nothing of the lane reached b's log: the plain record waits behind the stamped one.
    expect(await logEnd(b, 1)).toBe(1);
    expect(
      await metric(b, 'narad_producer_registry_reads_total{reason="lease",result="error"}'),
    ).toBeGreaterThan(0);
    bStore.failReads(false);
    const s = await stamped;
    expect(s.status, s.body).toBe(200);
    const t0 = performance.now();
    while ((await logEnd(b, 1)) < 3 && performance.now() - t0 < 5_000)
      await new Promise((r) => setTimeout(r, 20));
    expect(await logEnd(b, 1)).toBe(3);
  }, 20_000);
});

/** A peer that sends ConfirmProducerEpoch on its own (a confused or misconfigured member). */
const confusedPeer = () => testPeerPool();

describe("ConfirmProducerEpoch that no registry write backs (a confused peer)", () => {
  it("an epoch the store does not hold is not taken: the valid producer stays accepted, before and after the lease", async () => {
    const { b } = await twoBrokers();
    const p = await init(b, "app");
    expect((await produce(b, p, 1, 0)).status).toBe(200);
    const pool = confusedPeer();
    try {
      const r = await pool
        .peer(b.cluster!.address)
        .confirmProducerEpoch(
          { producer_id: p.producer_id, epoch: 4_000_000_000, from_node: "x" },
          Date.now() + 5_000,
        );
      // b answers what the store holds: the asker's barrier is not confirmed by it.
      expect(r.epoch).toBe(p.epoch);
    } finally {
      pool.close();
    }
    const at = await produce(b, p, 1, 1);
    expect(at.status, at.body).toBe(200);
    // And past the lease, after b re-read the store, still.
    await new Promise((r) => setTimeout(r, leaseMs + 100));
    const again = await produce(b, p, 1, 2);
    expect(again.status, again.body).toBe(200);
  });

  it("an id the registry never issued does not become a known producer", async () => {
    const { b } = await twoBrokers();
    const p = await init(b, "app");
    // Far beyond every block reserved (the memory store starts at 0, blocks of 1,000).
    const bogus = { producer_id: "p-987654321", epoch: 0 };
    expect(p.producer_id).not.toBe(bogus.producer_id);
    const pool = confusedPeer();
    try {
      await pool
        .peer(b.cluster!.address)
        .confirmProducerEpoch(
          { producer_id: bogus.producer_id, epoch: 0, from_node: "x" },
          Date.now() + 5_000,
        );
    } finally {
      pool.close();
    }
    const r = await produce(b, bogus, 1, 0);
    expect(r.status, r.body).toBe(400);
    expect(r.json().code).toBe("unknown_producer_id");
    expect(await logEnd(b, 1)).toBe(0);
  });
});
