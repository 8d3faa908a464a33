// Fan-out on a cluster (three in-process brokers sharing one in-memory
// metastore, harness/test-cluster.ts): the cursors run on each parent
// partition's owner whichever node took the create; a parent partition
// moved to another node under produce keeps every acknowledged parent
// record reaching the child (at least once: the new owner re-derives its
// start from the attach time, so duplicates are expected and counted).

import { afterEach, describe, expect, it } from "vitest";
import {
  drained,
  eventually,
  type TestNode as Node,
  produceIds,
  req,
  testClusters,
} from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, {
  prefix: "narad-fanout-cluster",
  dispatch: { commitTimeoutMs: 5_000 },
  moveTiming: { freezeTtlMs: 4_000, renewIntervalMs: 1_000, retryMs: 300, sourceDeleteDelayMs: 1_000 },
});

/** Every record id of every partition of `topic`, read through `node` (owner-routed). */
async function ids(node: Node, topic: string, partitions: number): Promise<number[]> {
  const out: number[] = [];
  for (let p = 0; p < partitions; p++) {
    let offset = 0;
    for (;;) {
      const r = await req(node, "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read ${topic}/${p}: ${r.status} ${r.text}`);
      const page = r.json() as { records: Array<{ payload: { id: number } }>; next_offset: number };
      for (const m of page.records) out.push(m.payload.id);
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return out;
}

const missing = (acked: readonly number[], got: readonly number[]) => {
  const have = new Set(got);
  return acked.filter((id) => !have.has(id));
};

describe("fan-out on a 3-node cluster", () => {
  it("copies from every parent partition's owner when another node took the create, and across a partition move", async () => {
    const tc = clusters.create();
    const [a, b, c] = await tc.startAll(["a", "b", "c"]);
    const nodes = [a!, b!, c!];
    expect((await req(a!, "POST", "/v1/topics", { name: "fp", partitions: 3 })).status).toBe(201);
    // The child is created (linked) through b; the parent's partitions are owned by a, b and c.
    const created = await req(b!, "POST", "/v1/topics", { name: "fc", parent: "fp" });
    expect(created.status, created.text).toBe(201);
    expect(new Set(tc.mc.owners("fp")).size).toBe(3);

    const acked: number[] = [];
    let next = 0;
    const produceRound = async (i: number) => {
      const batch = Array.from({ length: 20 }, () => next++);
      const r = await produceIds(nodes[i % 3]!, "fp", batch, i % 3);
      if (r.status === 202) acked.push(...batch);
    };
    for (let i = 0; i < 15; i++) await produceRound(i);
    await eventually("every acknowledged record in the child", 30_000, async () => {
      return missing(acked, await ids(c!, "fc", 3)).length === 0;
    });
    // Each owner reports its own cursor; none has the whole picture.
    const lag = (await req(a!, "GET", "/v1/topics/fp/children")).json().children[0];
    expect(lag.lag_complete).toBe(false);

    // Move the parent partition a owns to b under produce.
    const p = tc.mc.owners("fp").indexOf("a");
    let stop = false;
    const producer = (async () => {
      for (let i = 0; !stop; i++) {
        await produceRound(i);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const put = await req(b!, "PUT", `/admin/v1/moves/fp/${p}`, { from: "a" });
    expect(put.status, put.text).toBe(202);
    await eventually("move ready", 60_000, async () => {
      return (await req(b!, "GET", `/admin/v1/moves/fp/${p}`)).json().state === "ready";
    });
    tc.mc.setOwner("fp", p, "b");
    await eventually("move done", 60_000, async () => {
      return (await req(b!, "GET", `/admin/v1/moves/fp/${p}`)).json().state === "done";
    });
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await producer;
    await eventually("every WAL drained", 60_000, () => drained(nodes));
    const got = await eventually(
      "every acknowledged record in the child after the move",
      60_000,
      async () => {
        return missing(acked, await ids(c!, "fc", 3)).length === 0;
      },
    ).then(() => ids(c!, "fc", 3));
    const parent = await ids(c!, "fp", 3);
    expect(missing(acked, parent)).toEqual([]);
    expect(missing(acked, got)).toEqual([]);
    console.log(
      `fan-out cluster: acked=${acked.length} parent=${parent.length} child=${got.length} duplicates=${got.length - new Set(got).size}`,
    );
  }, 180_000);
});
