// The cluster data plane against a real API server: three `narad serve`
// processes with --metastore kubernetes (NaradTopics, NaradCluster status),
// a fake operator in this file (status.assignments round-robin; the test
// writes members and their states as the operator would), and a TCP proxy
// between the brokers and the API server that the tests freeze or cut.
//
//   - produce to every node, queue-consume and ack from every node;
//   - kill -9 an owner while producing: held while Maintenance, flows after a
//     restart; rerouted once Down except records in doubt (held for the
//     victim); nothing acknowledged lost or stored twice;
//   - delete a topic whose records are held: discarded only once the API
//     server (not a stale replica) says it is gone;
//   - the API server unreachable for 60 s: produce and consume go on, topic
//     creation is 503, membership does not move; afterwards creation works.
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemberStatus } from "../../packages/api/src/v1alpha1/types.ts";
import {
  type KubeBroker,
  type KubeBrokerSet,
  type KubePlatform,
  memberStatus,
  startKubeBrokers,
  startKubePlatform,
} from "../metastore/suite.ts";
import { waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import {
  type ApiProxy,
  GROUP,
  startProxy,
  VERSION,
  writeKubeconfigVia,
  writeMembers,
} from "./fake-operator.ts";

const log = stderrLog("cluster-kube-test");
const CLUSTER = "demo";
const IDS = ["demo-0", "demo-1", "demo-2"] as const;
const OUTAGE_MS = 60_000;

type Broker = KubeBroker;

let platform: KubePlatform | undefined;
let dir: string;
let kc: KubeConfig;
let namespace: string;
let proxy: ApiProxy;
let brokerKubeconfig: string;
let set: KubeBrokerSet | undefined;
const brokers: Broker[] = [];
let epoch = 1;
const states = new Map<string, MemberStatus["state"]>(IDS.map((id) => [id, "Active"]));

// ------------------------------------------------------------------ setup

const member = (b: Broker): MemberStatus => memberStatus(b, states.get(b.id) ?? "Active");

/** The operator's job: set member states, bump the epoch; waits until every running broker saw it. */
async function setStates(changes: Record<string, MemberStatus["state"]>): Promise<void> {
  for (const [id, st] of Object.entries(changes)) states.set(id, st);
  epoch++;
  await writeMembers(kc, namespace, CLUSTER, brokers.map(member), epoch);
  // No HTTP view of membership: give the watches a moment (they deliver in well under 100 ms here).
  await sleep(300);
}

// Auth as the operator sets it up (issue #9): a users file with an admin
// and a shared cluster RPC secret, both files; every request sends Basic admin.
const ADMIN_PASSWORD = randomBytes(12).toString("hex");
const AUTH_HEADER = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString("base64")}`;
const authFile = () => join(dir, "users.json");
const clusterSecretFile = () => join(dir, "cluster-secret");

async function writeSecurityFiles(): Promise<void> {
  const users = {
    users: [{ name: "admin", password: ADMIN_PASSWORD, grants: [{ action: "admin", topics: "*" }] }],
  };
  await writeFile(authFile(), JSON.stringify(users));
  await writeFile(clusterSecretFile(), randomBytes(32).toString("hex"));
}

/** (Re)starts one broker of the set: a kill -9 test brings its victim back on the same data. */
const startBroker = (b: Broker): Promise<void> => {
  if (set === undefined) throw new Error("the brokers were never set up");
  return set.start(b);
};

beforeAll(async () => {
  const started = Date.now();
  platform = await startKubePlatform({ prefix: "cluster-kube", log });
  ({ dir, kc } = platform);
  await writeSecurityFiles();
  proxy = await startProxy(platform.cp.ports.apiserver);
  brokerKubeconfig = await writeKubeconfigVia(
    platform.cp.kubeconfigPath,
    join(dir, "broker.kubeconfig"),
    proxy.port,
  );
  set = await startKubeBrokers(platform, {
    prefix: "cluster",
    cluster: CLUSTER,
    ids: IDS,
    epoch,
    state: (id) => states.get(id) ?? "Active",
    kubeconfig: brokerKubeconfig,
    logLevel: "error",
    args: [
      "--drain-timeout-ms",
      "3000",
      "--auth",
      "on",
      "--auth-file",
      authFile(),
      "--cluster-secret-file",
      clusterSecretFile(),
    ],
    log,
  });
  brokers.push(...set.brokers);
  namespace = set.namespace;
  log(`control plane, CRDs and 3 brokers ready in ${Date.now() - started} ms`);
});

afterAll(async () => {
  proxy?.set("open");
  await set?.stop();
  await proxy?.close();
  await platform?.stop();
});

// ------------------------------------------------------------------ HTTP helpers

const byId = (id: string): Broker => brokers.find((b) => b.id === id)!;

async function http(b: Broker, method: string, path: string, body?: string | object) {
  const res = await fetch(`${b.url}${path}`, {
    method,
    ...(body === undefined
      ? { headers: { authorization: AUTH_HEADER } }
      : typeof body === "string"
        ? { body, headers: { authorization: AUTH_HEADER } }
        : {
            body: JSON.stringify(body),
            headers: { authorization: AUTH_HEADER, "content-type": "application/json" },
          }),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

async function createTopic(b: Broker, name: string, partitions: number): Promise<void> {
  const r = await http(b, "POST", "/v1/topics", { name, partitions });
  expect(r.status, r.text).toBe(201);
  // Owners arrive from the fake operator; every broker must see them before the test relies on them.
  for (const x of brokers.filter((y) => y.proc !== undefined)) {
    await waitFor(
      async () => {
        const t = await http(x, "GET", `/v1/topics/${name}`);
        return (
          t.status === 200 &&
          (t.json().partition_stats as Array<{ owner_node: string }>).every((p) => p.owner_node !== "")
        );
      },
      { timeoutMs: 15_000, what: `${name} assigned at ${x.id}` },
    );
  }
}

/** true on 202; false on any other answer or a connection error (not acknowledged). */
async function produce(b: Broker, topic: string, id: number, partition?: number): Promise<boolean> {
  const q = partition === undefined ? `key=k${id}` : `key=k${id}&partition=${partition}`;
  try {
    return (await http(b, "POST", `/v1/topics/${topic}/produce?${q}`, JSON.stringify({ id }))).status === 202;
  } catch {
    return false;
  }
}

async function pending(b: Broker): Promise<number> {
  return (await http(b, "GET", "/admin/v1/status")).json().wal.pendingRecords as number;
}

async function metric(b: Broker, name: string, labels = ""): Promise<number> {
  const text = (await http(b, "GET", "/metrics")).text;
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

const rerouted = (b: Broker) => metric(b, "narad_dispatch_rerouted_records_total", '{reason="owner-down"}');

/** Every visible message of a topic as (id, partition), read through one node (owner-routed). */
async function readAll(b: Broker, topic: string): Promise<Array<{ id: number; partition: number }>> {
  const info = await http(b, "GET", `/v1/topics/${topic}`);
  expect(info.status, info.text).toBe(200);
  const out: Array<{ id: number; partition: number }> = [];
  for (let p = 0; p < info.json().partitions; p++) {
    let offset = 0;
    for (;;) {
      const r = await http(b, "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read ${topic}/${p} via ${b.id}: ${r.status} ${r.text}`);
      const page = r.json() as { records: Array<{ payload: { id: number } }>; next_offset: number };
      for (const m of page.records) out.push({ id: m.payload.id, partition: p });
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return out;
}

function duplicatesOf(ids: readonly number[]): number[] {
  const sorted = [...ids].sort((x, y) => x - y);
  return sorted.filter((v, i) => i > 0 && sorted[i - 1] === v);
}

interface ConsumeTally {
  deliveries: Map<number, number>;
  acked: Set<number>;
  fromPeer: number;
}

/**
 * Queue consumers on every running node (default group), acking each message
 * through a random node, until done() and two empty polls in a row (each
 * consumer), or 30 s without any delivery.
 */
async function consumeAll(
  topic: string,
  owners: readonly string[],
  tally: ConsumeTally,
  done: () => boolean,
  nodes: readonly Broker[] = brokers.filter((b) => b.proc !== undefined),
): Promise<void> {
  let progressAt = Date.now();
  await Promise.all(
    nodes.map(async (b) => {
      let empty = 0;
      // Gives up 30 s after the last delivery anywhere (a missing message fails the caller's check).
      while (!(done() && empty >= 2) && Date.now() - progressAt < 30_000) {
        const r = await http(b, "GET", `/v1/topics/${topic}/consume?wait=300ms`);
        if (r.status === 204) {
          empty++;
          continue;
        }
        expect(r.status, r.text).toBe(200);
        empty = 0;
        progressAt = Date.now();
        const m = r.json() as { partition: number; payload: { id: number }; receipt_handle: string };
        if (owners[m.partition] !== b.id) tally.fromPeer++;
        tally.deliveries.set(m.payload.id, (tally.deliveries.get(m.payload.id) ?? 0) + 1);
        const acker = nodes[Math.floor(Math.random() * nodes.length)]!;
        const ack = await http(
          acker,
          "POST",
          `/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(m.receipt_handle)}`,
        );
        expect(ack.status, ack.text).toBe(204);
        tally.acked.add(m.payload.id);
      }
    }),
  );
}

const newTally = (): ConsumeTally => ({ deliveries: new Map(), acked: new Set(), fromPeer: 0 });
const dupDeliveries = (t: ConsumeTally) => [...t.deliveries.values()].reduce((a, n) => a + n - 1, 0);
const ownersOf = (partitions: number) => Array.from({ length: partitions }, (_, p) => IDS[p % IDS.length]!);

// ------------------------------------------------------------------ tests

describe("cluster data plane on a real API server (3 broker processes)", () => {
  it("produce to every node, queue-consume and ack from every node: every message once", async () => {
    await createTopic(brokers[0]!, "orders", 6);
    const n = 900;
    const acked = new Set<number>();
    let producing = true;
    const tally = newTally();
    const consumers = consumeAll(
      "orders",
      ownersOf(6),
      tally,
      () => !producing && tally.acked.size >= acked.size,
    );
    await Promise.all(
      brokers.map(async (b, k) => {
        for (let i = k; i < n; i += brokers.length) if (await produce(b, "orders", i)) acked.add(i);
      }),
    );
    producing = false;
    await consumers;
    expect(acked.size).toBe(n);
    const missing = [...acked].filter((id) => !tally.acked.has(id));
    log(
      `orders: ${n} produced, ${tally.acked.size} consumed+acked (${tally.fromPeer} from a peer's partition), ${dupDeliveries(tally)} duplicate deliveries, ${missing.length} missing`,
    );
    expect(missing).toEqual([]);
    expect(dupDeliveries(tally)).toBe(0);
    expect(tally.fromPeer).toBeGreaterThan(0);
  });

  it("kill -9 an owner while producing: held while Maintenance, flows after restart, rerouted when Down (in-doubt records held); nothing lost or stored twice", async () => {
    const topic = "kill";
    await createTopic(brokers[0]!, topic, 6);
    const victim = byId("demo-2");
    const ingress = [byId("demo-0"), byId("demo-1")];
    const victimParts = ownersOf(6).flatMap((o, p) => (o === victim.id ? [p] : []));
    const acked = new Set<number>();
    let next = 0;
    let stop = false;
    const dead = new Set<string>();
    const producer = (async () => {
      const lanes = Array.from({ length: 4 }, async (_, lane) => {
        for (let k = lane; !stop; k++) {
          const b = brokers[k % brokers.length]!;
          if (dead.has(b.id)) continue;
          const id = next++;
          if (await produce(b, topic, id)) acked.add(id);
          if (k % 20 === 0) await sleep(5);
        }
      });
      await Promise.all(lanes);
    })();
    const kill = async () => {
      dead.add(victim.id);
      await victim.proc!.kill9();
      victim.proc = undefined;
    };
    const restart = async () => {
      await startBroker(victim);
      dead.delete(victim.id);
    };

    // 1. Kill, Maintenance: the ingress nodes hold the victim's records.
    await waitFor(() => acked.size >= 300, { timeoutMs: 30_000, what: "300 acknowledged" });
    await kill();
    await setStates({ [victim.id]: "Maintenance" });
    await sleep(1_500);
    for (const b of ingress) {
      expect(await pending(b), `WAL pending on ${b.id}`).toBeGreaterThan(0);
      expect(await metric(b, "narad_dispatch_held_records"), `held on ${b.id}`).toBeGreaterThan(0);
      expect(await rerouted(b)).toBe(0);
    }
    // 2. Restart, Active: held records flow to it.
    await restart();
    await setStates({ [victim.id]: "Active" });
    await waitFor(
      async () => {
        for (const b of ingress) if ((await metric(b, "narad_dispatch_held_records")) > 0) return false;
        return true;
      },
      { timeoutMs: 20_000, what: "nothing held after the restart" },
    );
    for (const b of ingress) expect(await rerouted(b)).toBe(0);
    const afterRestart = await readAll(ingress[0]!, topic);
    expect(duplicatesOf(afterRestart.map((r) => r.id))).toEqual([]); // no reroute yet: dedup covers the re-sends

    // 3. Kill again, Maintenance (held), then Down: rerouted to live siblings.
    const mark = acked.size;
    await waitFor(() => acked.size >= mark + 300, { timeoutMs: 30_000, what: "300 more acknowledged" });
    await kill();
    await setStates({ [victim.id]: "Maintenance" });
    await sleep(1_000);
    for (const b of ingress) expect(await rerouted(b)).toBe(0);
    await setStates({ [victim.id]: "Down" });
    await waitFor(async () => (await rerouted(ingress[0]!)) + (await rerouted(ingress[1]!)) > 0, {
      timeoutMs: 20_000,
      what: "rerouted once Down",
    });
    await sleep(1_000);
    stop = true;
    await producer;
    // Everything for the victim reroutes except records whose commit to it
    // was in flight at the kill: it may have stored them, so they are held
    // for it (broker/src/core/dispatch-plan.ts I4) until it is back.
    let lastRerouted = -1;
    await waitFor(
      async () => {
        const now = (await rerouted(ingress[0]!)) + (await rerouted(ingress[1]!));
        const settled = now === lastRerouted;
        lastRerouted = now;
        return settled;
      },
      { timeoutMs: 30_000, intervalMs: 1_000, what: "rerouting settled" },
    );
    const reroutedTotal = lastRerouted;
    const heldInDoubt =
      (await metric(ingress[0]!, "narad_dispatch_held_records")) +
      (await metric(ingress[1]!, "narad_dispatch_held_records"));

    // 4. The victim comes back: its own WAL drains; nothing acknowledged is missing.
    await restart();
    await setStates({ [victim.id]: "Active" });
    for (const b of brokers)
      await waitFor(async () => (await pending(b)) === 0, { timeoutMs: 30_000, what: `${b.id} drained` });
    const stored = await readAll(byId("demo-1"), topic);
    const ids = stored.map((r) => r.id);
    const seen = new Set(ids);
    const missing = [...acked].filter((id) => !seen.has(id));
    const dups = duplicatesOf(ids);
    const unacked = [...seen].filter((id) => !acked.has(id)).length;
    log(
      `kill: ${acked.size} acknowledged, 2 kills, ${reroutedTotal} rerouted, ${heldInDoubt} held in doubt while Down, ${missing.length} missing, ${dups.length} duplicates, ${unacked} stored but never acknowledged (in flight at a kill)`,
    );
    expect(missing).toEqual([]);
    // Records in doubt were held, not rerouted: nothing is stored twice.
    const where = dups.map((id) => `${id}@${stored.filter((r) => r.id === id).map((r) => r.partition)}`);
    expect(where, `duplicates (victim partitions ${victimParts})`).toEqual([]);
  });

  it("a deleted topic's held records are discarded only once the API server says it is gone", async () => {
    const topic = "gone";
    await createTopic(brokers[0]!, topic, 3);
    const owner = byId("demo-2");
    const ingress = [byId("demo-0"), byId("demo-1")];
    for (const b of brokers)
      await waitFor(async () => (await pending(b)) === 0, { timeoutMs: 30_000, what: `${b.id} idle` });
    await setStates({ [owner.id]: "Maintenance" });
    const perNode = 25;
    for (const [k, b] of ingress.entries())
      for (let i = 0; i < perNode; i++) expect(await produce(b, topic, k * perNode + i, 2)).toBe(true);
    const discarded0 = await Promise.all(
      ingress.map((b) => metric(b, "narad_dispatch_discarded_records_total")),
    );
    await sleep(1_000);
    for (const b of ingress) expect(await pending(b)).toBe(perNode);

    // Deleted at the API server while the brokers' watch is frozen: their
    // replicas still have the topic, so nothing is discarded.
    proxy.set("frozen");
    const objects = kc.makeApiClient(CustomObjectsApi);
    try {
      await objects.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "naradtopics",
        name: topic,
      });
      await expect(
        objects.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: "naradtopics",
          name: topic,
        }),
      ).rejects.toMatchObject({ code: 404 });
      await sleep(2_000);
      for (const [k, b] of ingress.entries()) {
        expect(await pending(b), `pending on ${b.id} while the replica is stale`).toBe(perNode);
        expect(await metric(b, "narad_dispatch_discarded_records_total")).toBe(discarded0[k]);
      }
    } finally {
      proxy.set("open");
    }
    // The watch resumes, the quorum read confirms: discarded.
    for (const [k, b] of ingress.entries()) {
      await waitFor(async () => (await pending(b)) === 0, { timeoutMs: 30_000, what: `${b.id} discarded` });
      expect((await metric(b, "narad_dispatch_discarded_records_total")) - discarded0[k]!).toBe(perNode);
    }
    await setStates({ [owner.id]: "Active" });
  });

  it(`the API server unreachable for ${OUTAGE_MS / 1000} s: produce and consume go on, topic changes 503, membership unchanged`, async () => {
    const topic = "outage";
    await createTopic(brokers[0]!, topic, 6);
    const ownersBefore = (await http(brokers[0]!, "GET", `/v1/topics/${topic}`))
      .json()
      .partition_stats.map((p: { owner_node: string }) => p.owner_node);
    const acked = new Set<number>();
    let producing = true;
    const tally = newTally();
    proxy.set("cut");
    const cutAt = Date.now();
    const consumers = consumeAll(
      topic,
      ownersOf(6),
      tally,
      () => !producing && tally.acked.size >= acked.size,
    );
    const producer = (async () => {
      let id = 0;
      while (Date.now() - cutAt < OUTAGE_MS) {
        const b = brokers[id % brokers.length]!;
        const i = id++;
        if (await produce(b, topic, i)) acked.add(i);
        if (i % 10 === 0) await sleep(20);
      }
    })();
    let refused = 0;
    let checks = 0;
    while (Date.now() - cutAt < OUTAGE_MS - 5_000) {
      for (const b of brokers) {
        const t0 = Date.now();
        const r = await http(b, "POST", "/v1/topics", { name: `during-${checks}-${b.id}`, partitions: 1 });
        expect(r.status, r.text).toBe(503);
        expect(r.headers.get("retry-after")).not.toBeNull();
        expect(Date.now() - t0).toBeLessThan(6_000);
        refused++;
        // Membership unchanged: every partition still served through every node (no owner taken for Down).
        const info = await http(b, "GET", `/v1/topics/${topic}`);
        expect(info.status, info.text).toBe(200);
        expect(info.json().partition_stats.map((p: { owner_node: string }) => p.owner_node)).toEqual(
          ownersBefore,
        );
      }
      checks++;
      await sleep(5_000);
    }
    await producer;
    proxy.set("open");
    producing = false;
    await consumers;
    const missing = [...acked].filter((id) => !tally.acked.has(id));
    log(
      `outage: ${Date.now() - cutAt} ms cut, ${acked.size} produced, ${tally.acked.size} consumed+acked, ${dupDeliveries(tally)} duplicate deliveries, ${missing.length} missing, ${refused} topic creations refused with 503`,
    );
    expect(acked.size).toBeGreaterThan(100);
    expect(missing).toEqual([]);
    expect(dupDeliveries(tally)).toBe(0);
    // After the restore: topic creation works again (once the watch is back).
    await waitFor(
      async () => {
        const r = await http(brokers[1]!, "POST", "/v1/topics", { name: "after-outage", partitions: 2 });
        return r.status === 201 || r.status === 409;
      },
      { timeoutMs: 30_000, what: "topic creation after the outage" },
    );
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "naradtopics" })) as {
      items: Array<{ metadata: { name: string } }>;
    };
    const names = list.items.map((t) => t.metadata.name);
    expect(names).toContain("after-outage");
    expect(names.filter((n) => n.startsWith("during-"))).toEqual([]);
    await kc.makeApiClient(CoreV1Api).readNamespace({ name: namespace });
  });
});
