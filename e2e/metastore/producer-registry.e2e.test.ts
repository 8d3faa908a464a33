// The producer-id registry of cluster mode (a ConfigMap, broker/src/producers/
// kube-registry-store.ts) against a real API server:
//
//   - registries in this process, each with its own store and client, as two
//     brokers would have: racing for id blocks and for epoch bumps of one
//     name (nothing issued twice, epochs distinct), a stale revision refused,
//     a bump made elsewhere seen at once by lookup() and soon by the watch, a
//     restart (and a crash after a block was written) never reusing an id, the
//     ConfigMap deleted (a new registry does not start at the ids issued),
//     the fence lease and barrier over the ConfigMap (a watch held back: the
//     old epoch only within the lease, then a re-read; a confirmation fences
//     at once);
//   - two real `narad serve --metastore kubernetes` processes: ids through
//     both at once, a second instance of a named producer fencing the first
//     through the other broker (at once, on a partition it never wrote: the
//     re-init barrier), kill -9 while inits are in flight, and the zombie
//     still fenced after the restart; one broker frozen (SIGSTOP) while the
//     name is taken through the other: the re-init waits out the lease and
//     the zombie is fenced on the first request after the freeze.
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeRegistryStore, registryDataKey } from "../../broker/src/producers/kube-registry-store.ts";
import {
  openProducerRegistry,
  ProducerFencedError,
  type ProducerRegistry,
  RegistryConflict,
  type RegistryStore,
} from "../../broker/src/producers/registry.ts";
import { idNumber, type RegistryState } from "../../broker/src/producers/registry-state.ts";
import { createNamespace } from "../cluster/fake-operator.ts";
import { waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import {
  type KubeBroker,
  type KubeBrokerSet,
  type KubePlatform,
  startKubeBrokers,
  startKubePlatform,
} from "./suite.ts";

const log = stderrLog("producer-registry-test");
const quiet = {
  debug: () => {},
  info: () => {},
  warn: (obj: object, msg: string) => log(`warn ${msg} ${JSON.stringify(obj)}`),
};
const timing = {
  watchTimeoutSeconds: 20,
  restartBaseMs: 100,
  restartMaxMs: 1_000,
  resyncIntervalMs: 60_000,
  maxSilenceMs: 45_000,
};

let platform: KubePlatform;
let kc: KubeConfig;
const open: ProducerRegistry[] = [];

beforeAll(async () => {
  platform = await startKubePlatform({ prefix: "producer-registry", log });
  kc = platform.kc;
});

afterAll(async () => {
  await Promise.all(open.map((r) => r.close().catch(() => undefined)));
  await platform?.stop();
});

/** A store with its own API client, as a separate broker has. */
async function storeIn(namespace: string, name: string, block: number): Promise<RegistryStore> {
  return kubeRegistryStore({
    kubeConfig: platform.adminConfig(),
    namespace,
    name,
    block,
    logger: quiet,
    timing,
  });
}

async function registryIn(namespace: string, name: string, block: number): Promise<ProducerRegistry> {
  const r = await openProducerRegistry(await storeIn(namespace, name, block), block);
  open.push(r);
  return r;
}

describe("the ConfigMap registry, two brokers' registries", () => {
  it("racing for blocks and epochs: no id handed out twice, every epoch of a name distinct", async () => {
    const ns = await createNamespace(kc, "reg");
    // Created by both at once (one create wins, the other reads it).
    const [a, b] = await Promise.all([
      registryIn(ns, "demo-producers", 3),
      registryIn(ns, "demo-producers", 3),
    ]);
    const unnamed = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).init()));
    const ids = unnamed.map((x) => x.id);
    expect(new Set(ids).size).toBe(ids.length);
    const named = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).init("billing")),
    );
    expect(new Set(named.map((x) => x.id)).size).toBe(1);
    expect(named.map((x) => x.epoch).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // The named id came from a block too: never one of the unnamed ones.
    expect(ids).not.toContain(named[0]!.id);
  });

  it("a stale revision is refused (409), so a block is written on the state it was computed from", async () => {
    const ns = await createNamespace(kc, "reg");
    const store = await storeIn(ns, "demo-producers", 10);
    const { state, rev } = await store.load();
    await store.save({ ...state, nextId: state.nextId + 10 }, rev);
    await expect(store.save({ ...state, nextId: state.nextId + 20 }, rev)).rejects.toBeInstanceOf(
      RegistryConflict,
    );
    expect((await store.load()).state.nextId).toBe(state.nextId + 10);
    await store.close?.();
  });

  it("a bump through another broker: lookup() re-reads at once, epochOf() follows the watch", async () => {
    const ns = await createNamespace(kc, "reg");
    const a = await registryIn(ns, "demo-producers", 10);
    const b = await registryIn(ns, "demo-producers", 10);
    const first = await a.init("orders");
    const second = await b.init("orders");
    expect(second).toEqual({ id: first.id, epoch: first.epoch + 1 });
    // An id issued by b a moment ago is known to a's lookup without waiting for the watch.
    const fresh = await b.init();
    expect(await a.lookup(fresh.id, 0)).toBe(0);
    expect(await a.lookup(first.id, second.epoch)).toBe(second.epoch);
    const c = await registryIn(ns, "demo-producers", 10);
    const third = await c.init("orders");
    await waitFor(() => a.epochOf(first.id) === third.epoch, {
      timeoutMs: 10_000,
      what: "a's watch saw the bump",
    });
    // Never an id nobody issued.
    expect(await a.lookup("p-999999999999999", 0)).toBeUndefined();
  });

  it("re-init from an epoch: a zombie is refused, a retry of a lost answer through the other broker is not", async () => {
    const ns = await createNamespace(kc, "reg");
    const a = await registryIn(ns, "demo-producers", 10);
    const b = await registryIn(ns, "demo-producers", 10);
    const zombie = await a.init("pay");
    const live = await b.init("pay");
    await expect(a.init("pay", zombie.epoch)).rejects.toBeInstanceOf(ProducerFencedError);
    const bumped = await a.init("pay", live.epoch);
    expect(bumped.epoch).toBe(live.epoch + 1);
    expect(await b.init("pay", live.epoch)).toEqual(bumped);
  });

  it("a restart, or a crash after a block was written, never reissues an id; epochs keep climbing", async () => {
    const ns = await createNamespace(kc, "reg");
    const issued: string[] = [];
    let epoch = -1;
    for (let run = 0; run < 3; run++) {
      // Each run is a broker start; the previous one is dropped without close (a crash).
      const r = await openProducerRegistry(await storeIn(ns, "demo-producers", 5), 5);
      open.push(r);
      for (let i = 0; i < 3; i++) issued.push((await r.init()).id);
      const e = await r.init("ledger");
      expect(e.epoch).toBe(epoch + 1);
      epoch = e.epoch;
    }
    expect(new Set(issued).size).toBe(issued.length);
    const nums = issued.map((id) => idNumber(id)!);
    // Each start takes a new block above every earlier one.
    for (let run = 1; run < 3; run++)
      expect(nums[run * 3]).toBeGreaterThan(Math.max(...nums.slice(0, run * 3)));
  });

  it("fence lease and barrier on the ConfigMap: a held-back watch answers the old epoch only within the lease; a confirmation fences at once", async () => {
    const ns = await createNamespace(kc, "reg");
    const leaseMs = 5_000;
    const clock = { t: 0 };
    const confirmedTo: Array<[string, number]> = [];
    // b's watched copy is frozen while `held` is set (a watch that has not delivered).
    let held: RegistryState | undefined;
    const bStore = await storeIn(ns, "demo-producers", 10);
    const bView: RegistryStore = {
      load: () => bStore.load(),
      save: (st, rev) => bStore.save(st, rev),
      peek: () => held ?? bStore.peek!(),
      close: () => bStore.close!(),
    };
    const b = await openProducerRegistry(bView, 10, Number.POSITIVE_INFINITY, {
      leaseMs,
      nowMs: () => clock.t,
    });
    open.push(b);
    let peers: ProducerRegistry[] = [];
    const a = await openProducerRegistry(
      await storeIn(ns, "demo-producers", 10),
      10,
      Number.POSITIVE_INFINITY,
      {
        leaseMs,
        nowMs: () => performance.now(),
        // ConfirmProducerEpoch, in process: the peers hold the epoch once this resolves.
        confirm: async (id, epoch) => {
          for (const p of peers) {
            if (((await p.confirmEpoch(id, epoch)) ?? -1) < epoch) return false;
            confirmedTo.push([id, epoch]);
          }
          return true;
        },
      },
    );
    open.push(a);
    const zombie = await a.init("orders");
    await waitFor(() => b.epochOf(zombie.id) === 0, { timeoutMs: 10_000, what: "b's watch saw the name" });
    held = bStore.peek!();

    // No confirmation reaches b: within b's lease its view still says epoch 0, after it b re-reads the ConfigMap.
    const second = await a.init("orders");
    expect(second.epoch).toBe(1);
    expect(await b.lookup(zombie.id, 0)).toBe(0);
    clock.t += leaseMs;
    expect(await b.lookup(zombie.id, 0)).toBe(1);

    // With the confirmation: fenced at once (b read the ConfigMap to confirm), the watch still held.
    peers = [b];
    const third = await a.init("orders");
    expect(confirmedTo).toEqual([[zombie.id, third.epoch]]);
    expect(b.epochOf(zombie.id)).toBe(third.epoch);
    expect(await b.lookup(zombie.id, second.epoch)).toBe(third.epoch);
    // The held events delivered late take nothing back.
    held = undefined;
    await waitFor(() => bStore.peek!().named.orders?.epoch === third.epoch, {
      timeoutMs: 10_000,
      what: "b's watch delivered the bumps",
    });
    expect(b.epochOf(zombie.id)).toBe(third.epoch);
  });

  it("the ConfigMap deleted: a new registry starts far from the ids the logs may remember", async () => {
    const ns = await createNamespace(kc, "reg");
    const a = await registryIn(ns, "demo-producers", 1000);
    const before = idNumber((await a.init()).id)!;
    await kc.makeApiClient(CoreV1Api).deleteNamespacedConfigMap({ namespace: ns, name: "demo-producers" });
    const b = await registryIn(ns, "demo-producers", 1000);
    const after = idNumber((await b.init()).id)!;
    expect(Math.abs(after - before)).toBeGreaterThanOrEqual(1000);
    // The re-created object holds a valid state.
    const cm = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ namespace: ns, name: "demo-producers" });
    expect(JSON.parse(cm.data?.[registryDataKey] ?? "{}").version).toBe(1);
  });
});

// ------------------------------------------------------------------ real brokers

const CLUSTER = "demo";
const IDS = ["demo-0", "demo-1"] as const;
/** --producer-fence-lease-ms of both brokers: short, so a re-init that waits it out stays quick. */
const FENCE_LEASE_MS = 1_500;

type Broker = KubeBroker;

describe("two narad processes on the kubernetes metastore", () => {
  const brokers: Broker[] = [];
  let set: KubeBrokerSet | undefined;

  const start = (b: Broker): Promise<void> => {
    if (set === undefined) throw new Error("the brokers were never set up");
    return set.start(b);
  };

  const http = async (b: Broker, method: string, path: string, body?: object, headers = {}) => {
    const res = await fetch(`${b.url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
  };

  const init = async (b: Broker, name?: string): Promise<{ producer_id: string; epoch: number }> => {
    const r = await http(b, "POST", "/v1/producers", name === undefined ? {} : { name });
    expect(r.status, r.text).toBe(201);
    return r.json() as unknown as { producer_id: string; epoch: number };
  };

  const produce = (b: Broker, p: { producer_id: string; epoch: number }, seq: number, partition: number) =>
    http(
      b,
      "POST",
      `/v1/topics/orders/produce?acks=all&partition=${partition}`,
      { seq },
      {
        "narad-producer-id": p.producer_id,
        "narad-producer-epoch": String(p.epoch),
        "narad-producer-seq": String(seq),
      },
    );

  beforeAll(async () => {
    set = await startKubeBrokers(platform, {
      prefix: "brokers",
      cluster: CLUSTER,
      ids: IDS,
      logLevel: "error",
      args: ["--auth", "off", "--producer-fence-lease-ms", String(FENCE_LEASE_MS)],
      log,
    });
    brokers.push(...set.brokers);
    const r = await http(brokers[0]!, "POST", "/v1/topics", { name: "orders", partitions: 2 });
    expect(r.status, r.text).toBe(201);
    for (const b of brokers)
      await waitFor(
        async () => {
          const t = await http(b, "GET", "/v1/topics/orders");
          return (
            t.status === 200 &&
            (t.json().partition_stats as Array<{ owner_node: string }>).every((p) => p.owner_node !== "")
          );
        },
        { timeoutMs: 20_000, what: `orders assigned at ${b.id}` },
      );
  }, 180_000);

  afterAll(async () => {
    await set?.stop();
  });

  it("ids through both brokers at once are distinct; an id from one is accepted by the other at once", async () => {
    const got = await Promise.all(Array.from({ length: 40 }, (_, i) => init(brokers[i % 2]!)));
    expect(new Set(got.map((g) => g.producer_id)).size).toBe(40);
    // Issued by demo-0 a moment ago, produced through demo-1 (its lookup re-reads on the miss).
    const p = await init(brokers[0]!);
    const r = await produce(brokers[1]!, p, 0, 0);
    expect(r.status, r.text).toBe(200);
  });

  it("two clients with one name: the second fences the first through the other broker, also after kill -9", async () => {
    const [b0, b1] = [brokers[0]!, brokers[1]!];
    const zombie = await init(b0, "billing");
    expect((await produce(b0, zombie, 0, 0)).status).toBe(200);
    const current = await init(b1, "billing");
    expect(current).toEqual({ producer_id: zombie.producer_id, epoch: zombie.epoch + 1 });
    // The new instance wrote partition 0: its owner fences the zombie whatever the ingress view.
    expect((await produce(b1, current, 0, 0)).status).toBe(200);
    const fenced = await produce(b0, zombie, 1, 0);
    expect(fenced.status, fenced.text).toBe(409);
    expect(fenced.json().code).toBe("producer_fenced");
    // Partition 1, which the new instance never wrote: fenced at once. demo-1's
    // init answered only after demo-0 confirmed the new epoch (or its lease ran out).
    const never = await produce(b0, zombie, 0, 1);
    expect(never.status, never.text).toBe(409);
    expect(never.json().code).toBe("producer_fenced");

    // kill -9 demo-0 while inits (unnamed and named) are in flight through it.
    const answered: Array<{ producer_id: string; epoch: number }> = [];
    const inflight = Array.from({ length: 20 }, (_, i) =>
      http(b0, "POST", "/v1/producers", i % 4 === 0 ? { name: "billing" } : {})
        .then((r) => {
          if (r.status === 201) answered.push(r.json() as unknown as { producer_id: string; epoch: number });
        })
        .catch(() => undefined),
    );
    await new Promise((r) => setTimeout(r, 30));
    await b0.proc!.kill9();
    await Promise.all(inflight);
    await start(b0);
    const after = await Promise.all(Array.from({ length: 10 }, () => init(b0)));
    const seen = new Set(answered.map((a) => a.producer_id));
    for (const a of after) expect(seen.has(a.producer_id), a.producer_id).toBe(false);
    const maxEpoch = Math.max(
      current.epoch,
      ...answered.filter((a) => a.producer_id === zombie.producer_id).map((a) => a.epoch),
    );
    const next = await init(b0, "billing");
    expect(next.epoch).toBeGreaterThan(maxEpoch);
    // The zombie (and the instance before this one) stay fenced after the restart, through either broker.
    for (const b of brokers) {
      const r = await produce(b, zombie, 2, 0);
      expect(r.status, r.text).toBe(409);
      expect(r.json().code).toBe("producer_fenced");
    }
    const ok = await produce(b0, next, 0, 1);
    expect(ok.status, ok.text).toBe(200);
  }, 180_000);

  const metric = async (b: Broker, line: string): Promise<number> => {
    const r = await http(b, "GET", "/metrics");
    const hit = r.text.split("\n").find((l) => l.startsWith(`${line} `));
    return hit === undefined ? 0 : Number(hit.slice(line.length + 1));
  };

  it("a broker frozen (SIGSTOP) while a second instance takes the name through the other: the re-init waits out the lease, the zombie is fenced on the first request after", async () => {
    const [b0, b1] = [brokers[0]!, brokers[1]!];
    const zombie = await init(b0, "ledger");
    // Partition 0 is demo-0's: the new instance will never write it.
    expect((await produce(b0, zombie, 0, 0)).status).toBe(200);
    const confirmedBefore = await metric(b1, 'narad_producer_fence_barrier_total{outcome="confirmed"}');
    const leaseBefore = await metric(b1, 'narad_producer_fence_barrier_total{outcome="lease"}');
    // Both up: the barrier ends on demo-0's confirmation.
    const second = await init(b1, "ledger");
    expect(await metric(b1, 'narad_producer_fence_barrier_total{outcome="confirmed"}')).toBe(
      confirmedBefore + 1,
    );
    b0.proc!.child.kill("SIGSTOP");
    let current: { producer_id: string; epoch: number };
    let waited: number;
    try {
      // demo-0 can neither confirm nor see the bump through its watch.
      const started = performance.now();
      current = await init(b1, "ledger");
      waited = performance.now() - started;
    } finally {
      b0.proc!.child.kill("SIGCONT");
    }
    expect(current.epoch).toBe(second.epoch + 1);
    expect(waited).toBeGreaterThanOrEqual(FENCE_LEASE_MS);
    expect(await metric(b1, 'narad_producer_fence_barrier_total{outcome="lease"}')).toBe(leaseBefore + 1);
    // The first request demo-0 serves after the freeze, for its own partition: fenced, both older instances.
    const z = await produce(b0, zombie, 1, 0);
    expect(z.status, z.text).toBe(409);
    expect(z.json().code).toBe("producer_fenced");
    const s2 = await produce(b0, second, 0, 0);
    expect(s2.status, s2.text).toBe(409);
    const ok = await produce(b0, current, 0, 0);
    expect(ok.status, ok.text).toBe(200);
  }, 120_000);
});
