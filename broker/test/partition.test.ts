// One broker cut off from the others. Three in-process brokers share an
// in-memory metastore (as in cluster.test.ts), but every node reaches every
// peer's cluster RPC through its own TCP link (test/harness/links.ts): one
// proxy per (from, to) pair. On loopback all connections come from 127.0.0.1,
// so a firewall rule cannot single out one broker; per-pair links can. A cut
// blackholes the links to and from one node (connections stay open and go
// silent, as under a real partition, so RPC deadlines, not resets, fire).
//
// 1. Membership keeps the cut node Active (its pod is still Ready): produce
//    keeps answering 202 on every node, records for the cut node's partitions
//    wait in the other nodes' WALs and its own records for theirs wait in its
//    WAL; after the heal everything is visible exactly once through every node.
// 2. The operator declares the cut node Down mid-cut: the others reroute its
//    partitions' new records to siblings. Records whose commit timed out on
//    the silent link have an unknown outcome (the cut node may have stored
//    them), so they are held for it, not rerouted (dispatch-plan.ts I4);
//    after the heal they reach it and its dedup answers for what it had:
//    nothing acknowledged is lost, nothing is stored twice.

import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Metastore } from "../src/meta/types.ts";
import { LinkMesh } from "./harness/links.ts";
import {
  metric,
  type TestNode as Node,
  req,
  type TestCluster,
  testClusters,
  walPending,
} from "./harness/test-cluster.ts";

const PARTITIONS = 6;
let mesh: LinkMesh | undefined;
// The brokers go first, then the links they talk through.
const clusters = testClusters(
  (teardown) =>
    afterEach(async () => {
      await teardown();
      await mesh?.close();
      mesh = undefined;
    }),
  // Commits time out on a silent link well within the test's cut.
  { prefix: "narad-partition", dispatch: { commitTimeoutMs: 2_000 } },
);

/** A metastore view whose members' cluster addresses point at this node's links. */
function linkedView(view: Metastore, self: string, links: LinkMesh): Metastore {
  return new Proxy(view, {
    get(target, prop, receiver) {
      if (prop === "members") {
        return () =>
          target.members().map((m) => {
            const via = m.id === self ? undefined : links.address(self, m.id);
            return via === undefined ? m : { ...m, clusterAddress: via };
          });
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function startCluster(tc: TestCluster, ids: string[]): Promise<Node[]> {
  const links = new LinkMesh();
  mesh = links;
  const nodes = await tc.startAll(ids, {
    metastore: (id, view) => linkedView(view, id, links),
    publish: false,
  });
  // Links exist before any member is published, so no RPC ever bypasses them.
  for (const from of nodes) {
    for (const to of nodes) {
      if (from.id !== to.id) await links.link(from.id, to.id, to.clusterAddress);
    }
  }
  for (const n of nodes) tc.publish(n.id);
  return nodes;
}

/** Produces continuously on every node; records each id answered 202. */
class Load {
  readonly acked = new Set<number>();
  readonly refused = new Map<string, number>();
  #next = 0;
  #running = true;
  readonly #loops: Promise<void>[];
  constructor(nodes: Node[]) {
    this.#loops = nodes.map((n) => this.#loop(n));
  }
  async #loop(node: Node): Promise<void> {
    while (this.#running) {
      const id = this.#next++;
      const r = await req(node, "POST", `/v1/topics/t/produce?key=k${id}`, JSON.stringify({ id }));
      if (r.status === 202) this.acked.add(id);
      else this.refused.set(`${node.id} ${r.status}`, (this.refused.get(`${node.id} ${r.status}`) ?? 0) + 1);
      await sleep(5);
    }
  }
  ackedVia(): number {
    return this.acked.size;
  }
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }
}

/** Every id stored in the topic, read through one node (remote partitions over the cluster RPC). */
async function readAll(node: Node): Promise<number[] | undefined> {
  const ids: number[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    let offset = 0;
    for (;;) {
      const r = await req(node, "GET", `/v1/topics/t/records?partition=${p}&offset=${offset}&limit=1000`);
      if (r.status !== 200) return undefined;
      const page = r.json() as { records: Array<{ payload: { id: number } }>; next_offset: number };
      for (const m of page.records) ids.push(m.payload.id);
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return ids;
}

interface Count {
  lost: number[];
  duplicated: number[];
}

/** Waits until every acked id is readable through `node` (or the deadline), then counts. */
async function settle(node: Node, acked: Set<number>, timeoutMs: number): Promise<Count> {
  const deadline = Date.now() + timeoutMs;
  let ids: number[] = [];
  for (;;) {
    ids = (await readAll(node)) ?? [];
    const seen = new Set(ids);
    if ([...acked].every((id) => seen.has(id)) || Date.now() > deadline) break;
    await sleep(250);
  }
  const seen = new Map<number, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  return {
    lost: [...acked].filter((id) => !seen.has(id)),
    duplicated: [...seen].filter(([, n]) => n > 1).map(([id]) => id),
  };
}

describe("one broker cut off from the others", () => {
  it("held while Active: every node keeps answering 202; after the heal all is visible exactly once", async () => {
    const tc = clusters.create();
    const nodes = await startCluster(tc, ["a", "b", "c"]);
    const [a, b, c] = nodes as [Node, Node, Node];
    expect((await req(a, "POST", "/v1/topics", { name: "t", partitions: PARTITIONS })).status).toBe(201);

    const load = new Load(nodes);
    await sleep(1_500);
    const before = load.ackedVia();
    mesh!.isolate("b");
    await sleep(6_000);
    const duringCut = load.ackedVia() - before;
    // WAL-first: the cut node and the others all keep acknowledging; the
    // records that cannot reach their owner wait in the ingress WALs.
    const pendingB = await walPending(b);
    const pendingA = await walPending(a);
    mesh!.heal("b");
    await sleep(1_500);
    await load.stop();

    const refusedDuringRun = [...load.refused].map(([k, n]) => `${k}×${n}`).join(", ") || "none";
    const counts = await Promise.all(nodes.map((n) => settle(n, load.acked, 60_000)));
    console.log(
      `partition (held): ${load.acked.size} acked, ${duringCut} during the 6 s cut; WAL pending at the cut: a=${pendingA} b=${pendingB}; refused: ${refusedDuringRun}; ` +
        counts
          .map((k, i) => `via ${nodes[i]!.id}: lost ${k.lost.length} dup ${k.duplicated.length}`)
          .join("; "),
    );
    expect(duringCut).toBeGreaterThan(0);
    expect(pendingB).toBeGreaterThan(0);
    expect(pendingA).toBeGreaterThan(0);
    expect(load.refused.size).toBe(0);
    for (const k of counts) {
      expect(k.lost.slice(0, 10)).toEqual([]);
      expect(k.duplicated.slice(0, 10)).toEqual([]);
    }
    for (const n of [a, b, c]) expect(await walPending(n)).toBe(0);
  }, 180_000);

  it("declared Down mid-cut: the others reroute its partitions' new records, hold those in doubt; nothing lost or stored twice", async () => {
    const tc = clusters.create();
    const { mc } = tc;
    const nodes = await startCluster(tc, ["a", "b", "c"]);
    const [a, , c] = nodes as [Node, Node, Node];
    expect((await req(a, "POST", "/v1/topics", { name: "t", partitions: PARTITIONS })).status).toBe(201);

    const load = new Load(nodes);
    await sleep(1_500);
    mesh!.isolate("b");
    await sleep(3_000);
    mc.setState("b", "Down");
    // The survivors reroute b's partitions' records to siblings, except the
    // ones whose commit to b timed out (in doubt): held for b.
    const rerouted = async () =>
      (await metric(a, "narad_dispatch_rerouted_records_total", '{reason="owner-down"}')) +
      (await metric(c, "narad_dispatch_rerouted_records_total", '{reason="owner-down"}'));
    const deadline = Date.now() + 30_000;
    let before = -1;
    for (;;) {
      const now = await rerouted();
      if ((now > 0 && now === before) || Date.now() > deadline) break;
      before = now;
      await sleep(1_000);
    }
    const survivorsRerouted = await rerouted();
    const survivorsHeld =
      (await metric(a, "narad_dispatch_held_records")) + (await metric(c, "narad_dispatch_held_records"));
    const survivorsPending = (await walPending(a)) + (await walPending(c));
    mesh!.heal("b");
    mc.setState("b", "Active");
    await sleep(1_500);
    await load.stop();

    const counts = await Promise.all(nodes.map((n) => settle(n, load.acked, 60_000)));
    console.log(
      `partition (Down): ${load.acked.size} acked; while b was Down the survivors rerouted ${survivorsRerouted}, held ${survivorsHeld} in doubt (WAL pending ${survivorsPending}); ` +
        counts
          .map(
            (k, i) =>
              `via ${nodes[i]!.id}: lost ${k.lost.length} dup ${k.duplicated.length} ${k.duplicated.slice(0, 5).join(",")}`,
          )
          .join("; "),
    );
    expect(survivorsRerouted).toBeGreaterThan(0);
    for (const k of counts) {
      expect(k.lost.slice(0, 10)).toEqual([]);
      expect(k.duplicated.slice(0, 10)).toEqual([]);
    }
  }, 180_000);
});
