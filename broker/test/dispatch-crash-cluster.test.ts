// The dispatcher under node crashes in a 3-broker in-process cluster.
// Single-copy: producers keep writing through every running node (so most
// records cross to another owner through the dispatcher) while a random node
// is crashed (crash(): no drain, no flush, the in-process kill -9) and
// restarted on its data dir, for several rounds. Replicated: acks=wal
// producers write through the two followers while the leader is crashed,
// marked Down and replaced from the ISR; the followers' dispatchers must hold
// the records for the new leader. Either way every 202-acknowledged id must
// then be readable exactly once: nothing lost behind a moved checkpoint,
// nothing stored twice.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  drained,
  eventually,
  req,
  type TestCluster,
  type TestNode,
  testClusters,
} from "./harness/test-cluster.ts";

const rounds = Number(process.env.NARAD_DISPATCH_CRASH_ROUNDS ?? 6);
const clusters = testClusters(afterEach, { prefix: "narad-dcrash", dispatch: { commitTimeoutMs: 2_000 } });

async function readIds(node: TestNode, topic: string, partitions: number): Promise<string[]> {
  const ids: string[] = [];
  for (let p = 0; p < partitions; p++) {
    let offset = 0;
    for (;;) {
      const r = await req(node, "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read ${topic}/${p}: ${r.status} ${r.text}`);
      const page = r.json() as { records: Array<{ payload: { id: string } }>; next_offset: number };
      for (const m of page.records) ids.push(m.payload.id);
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return ids;
}

async function hwmTotal(node: TestNode, topic: string): Promise<number> {
  const r = await req(node, "GET", `/v1/topics/${topic}`);
  if (r.status !== 200) return -1;
  return (r.json().partition_stats as Array<{ high_watermark: number }>).reduce(
    (a, p) => a + p.high_watermark,
    0,
  );
}

async function readAll(node: TestNode, topic: string, partitions: number): Promise<string[] | undefined> {
  try {
    return await readIds(node, topic, partitions);
  } catch {
    return undefined;
  }
}

async function produceLoop(
  tc: TestCluster,
  ids: readonly string[],
  round: number,
  w: number,
  acked: Set<string>,
  stop: { now: boolean },
  topic = "dc",
): Promise<void> {
  for (let i = 0; !stop.now; i++) {
    const running = tc.nodes().filter((n) => ids.includes(n.id));
    const node = running[(w + i) % running.length];
    if (node === undefined || !ids.includes(node.id)) continue;
    const id = `r${round}-w${w}-m${i}`;
    try {
      const body = [0, 1, 2]
        .map((j) => JSON.stringify({ key: `${id}-${j}`, payload: { id: `${id}-${j}` } }))
        .join("\n");
      const r = await req(
        node,
        "POST",
        `/v1/topics/${topic}/produce-batch${topic === "rc" ? "?acks=wal" : ""}`,
        body,
        {
          "content-type": "application/x-ndjson",
        },
      );
      if (r.status === 202) for (const j of [0, 1, 2]) acked.add(`${id}-${j}`);
    } catch {
      // the node crashed under the request: not acknowledged
    }
  }
}

describe("dispatcher across node crashes (3 in-process brokers)", () => {
  it(`every acknowledged record exactly once over ${rounds} crash rounds`, async () => {
    const tc = clusters.create();
    const names = ["a", "b", "c"];
    const nodes = await tc.startAll(names);
    const partitions = 6;
    const c = await req(nodes[0]!, "POST", "/v1/topics", { name: "dc", partitions });
    expect(c.status, c.text).toBe(201);
    const acked = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const stop = { now: false };
      const workers = Array.from({ length: 6 }, (_, w) => produceLoop(tc, names, round, w, acked, stop));
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 600));
      const victim = names[Math.floor(Math.random() * names.length)]!;
      await tc.kill(victim);
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
      await tc.restart(victim);
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      stop.now = true;
      await Promise.all(workers);
    }
    const reader = tc.node("a");
    let ids: string[] = [];
    await eventually("every acknowledged record visible", 60_000, async () => {
      if ((await hwmTotal(reader, "dc")) < acked.size) return false;
      ids = await readIds(reader, "dc", partitions);
      const seen = new Set(ids);
      return [...acked].every((id) => seen.has(id));
    }).catch(async () => {
      // Not all there in time (a real loss): count what is.
      ids = await readIds(reader, "dc", partitions);
    });
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    const missing = [...acked].filter((id) => !counts.has(id)).length;
    const duplicated = [...counts.values()].filter((n) => n > 1).length;
    console.log(
      `dispatch crash cluster: acked=${acked.size} read=${ids.length} missing=${missing} duplicated=${duplicated}`,
    );
    expect(acked.size).toBeGreaterThan(rounds * 30);
    expect(missing).toBe(0);
    expect(duplicated).toBe(0);
  }, 180_000);

  it("a replicated partition's records are held for the new leader across its crash, stored exactly once", async () => {
    const tc = clusters.create({
      args: ["--replication", "on", "--replica-lag-ms", "10000", "--replica-commit-timeout-ms", "10000"],
    });
    await tc.startAll(["a", "b", "c"]);
    const volumeIdOf = (n: TestNode) =>
      (JSON.parse(readFileSync(join(n.dir, "volume-id"), "utf8")) as { uuid: string }).uuid;
    for (const n of tc.nodes()) tc.mc.setVolumeId(n.id, volumeIdOf(n));
    const c = await req(tc.node("a"), "POST", "/v1/topics", {
      name: "rc",
      partitions: 1,
      replication_factor: 3,
    });
    expect(c.status, c.text).toBe(201);
    const record = tc.mc.replicaAssignment("rc", 0)!;
    const leaderId = record.leader!;
    const others = record.replicas.filter((m) => m !== leaderId);
    // The topic is known on every node before the clock starts.
    for (const id of others) {
      await eventually(`produce through ${id}`, 15_000, async () => {
        const r = await req(
          tc.node(id),
          "POST",
          "/v1/topics/rc/produce?key=warm&acks=wal",
          JSON.stringify({ id: "warm" }),
        );
        return r.status === 202;
      });
    }
    const acked = new Set<string>(["warm"]);
    const stop = { now: false };
    const workers = Array.from({ length: 4 }, (_, w) => produceLoop(tc, others, 0, w, acked, stop, "rc"));
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 500));
    await tc.kill(leaderId);
    const atKill = acked.size;
    // acks=wal: 202 once in the ingress WAL; while there is no leader the dispatcher holds them.
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 500));
    tc.mc.setState(leaderId, "Down");
    await new Promise((r) => setTimeout(r, 200));
    tc.mc.setReplicaAssignment("rc", 0, {
      ...record,
      leader: others[0]!,
      leaderEpoch: record.leaderEpoch + 1,
      isr: record.isr.filter((m) => m.member !== leaderId),
    });
    await new Promise((r) => setTimeout(r, 500 + Math.random() * 500));
    stop.now = true;
    await Promise.all(workers);
    const survivors = tc.nodes();
    await eventually("surviving WALs drained", 30_000, () => drained(survivors)).catch(() => undefined);
    const ids = (await readAll(tc.node(others[0]!), "rc", 1)) ?? [];
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    const missing = [...acked].filter((id) => !counts.has(id)).length;
    // "warm" was produced once per node on purpose.
    counts.delete("warm");
    const duplicated = [...counts.values()].filter((n) => n > 1).length;
    console.log(
      `dispatch crash replicated: acked=${acked.size} (at leader kill ${atKill}) read=${ids.length} missing=${missing} duplicated=${duplicated}`,
    );
    expect(acked.size).toBeGreaterThan(atKill);
    expect(missing).toBe(0);
    expect(duplicated).toBe(0);
  }, 120_000);
});
