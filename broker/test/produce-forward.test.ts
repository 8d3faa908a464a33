// Produce on a draining or decommissioning node is forwarded to a healthy
// peer's WAL (http/produce-forward.ts, cluster RPC Ingest): three in-process
// brokers on a shared in-memory metastore. A 202 from the leaving node means
// a peer fsynced the record; every acknowledged record is readable exactly
// once; nothing lands in the leaving node's own WAL; what cannot be
// forwarded (acks=all, no healthy peer) is still refused with 503.

import { afterEach, describe, expect, it } from "vitest";
import type { Metastore } from "../src/meta/types.ts";
import { eventually, metric, type TestNode as Node, req, testClusters } from "./harness/test-cluster.ts";

const clusters = testClusters(afterEach, { prefix: "narad-forward" });

async function walNextSeq(node: Node): Promise<number> {
  return (await req(node, "GET", "/admin/v1/status")).json().wal.nextSeq as number;
}

async function readIds(node: Node, topic: string, partitions: number): Promise<number[]> {
  const ids: number[] = [];
  for (let p = 0; p < partitions; p++) {
    let offset = 0;
    for (;;) {
      const r = await req(node, "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read ${topic}/${p}: ${r.status} ${r.text}`);
      const page = r.json() as { records: Array<{ payload: { id: number } }>; next_offset: number };
      for (const m of page.records) ids.push(m.payload.id);
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return ids.sort((a, b) => a - b);
}

describe("produce on a leaving node is forwarded to a peer's WAL", () => {
  it("draining (planned restart) and decommissioning: every produce 202, stored once, none in the leaving WAL", async () => {
    const tc = clusters.create();
    const [a, b, c] = await tc.startAll(["a", "b", "c"]);
    expect((await req(a!, "POST", "/v1/topics", { name: "t", partitions: 6 })).status).toBe(201);

    // A planned restart's drain.
    expect((await req(a!, "POST", "/admin/v1/drain")).status).toBe(200);
    const before = await walNextSeq(a!);
    for (let i = 0; i < 100; i++) {
      const r = await req(a!, "POST", `/v1/topics/t/produce?key=k${i}`, JSON.stringify({ id: i }));
      expect(r.status, r.text).toBe(202);
    }
    // Batches too.
    const batch = Array.from({ length: 50 }, (_, j) =>
      JSON.stringify({ key: `k${100 + j}`, payload: { id: 100 + j } }),
    );
    const rb = await a!.broker.app.inject({
      method: "POST",
      url: "/v1/topics/t/produce-batch",
      payload: batch.join("\n"),
      headers: { "content-type": "application/x-ndjson" },
    });
    expect(rb.statusCode, rb.body).toBe(202);
    expect(await walNextSeq(a!)).toBe(before);
    expect(await metric(a!, "narad_produce_forwarded_records_total")).toBe(150);
    expect(
      (await metric(b!, "narad_produce_ingested_for_peers_records_total")) +
        (await metric(c!, "narad_produce_ingested_for_peers_records_total")),
    ).toBe(150);

    // Not forwardable: acks=all answers with this node's commit outcome.
    const all = await req(a!, "POST", "/v1/topics/t/produce?key=x&acks=all", JSON.stringify({ id: -1 }));
    expect(all.status).toBe(503);

    // A scale-down's Decommissioning member forwards the same way.
    expect((await req(a!, "DELETE", "/admin/v1/drain")).status).toBe(200);
    tc.publish("a", "Decommissioning");
    for (let i = 150; i < 200; i++) {
      const r = await req(a!, "POST", `/v1/topics/t/produce?key=k${i}`, JSON.stringify({ id: i }));
      expect(r.status, r.text).toBe(202);
    }
    expect(await walNextSeq(a!)).toBe(before);

    const want = Array.from({ length: 200 }, (_, i) => i);
    await eventually(
      "every forwarded record readable",
      30_000,
      async () => (await readIds(b!, "t", 6)).length >= 200,
    );
    expect(await readIds(b!, "t", 6)).toEqual(want);
    expect(await readIds(a!, "t", 6)).toEqual(want);
  });

  it("no healthy peer: 503 (nothing stored), as before", async () => {
    const tc = clusters.create();
    const [a, b, c] = await tc.startAll(["a", "b", "c"]);
    expect((await req(a!, "POST", "/v1/topics", { name: "t", partitions: 3 })).status).toBe(201);
    for (const n of [a!, b!, c!]) expect((await req(n, "POST", "/admin/v1/drain")).status).toBe(200);
    const r = await req(a!, "POST", "/v1/topics/t/produce?key=k", JSON.stringify({ id: 0 }));
    expect(r.status).toBe(503);
    // b and c refused (FAILED_PRECONDITION: stored nothing), so no record exists anywhere.
    for (const n of [b!, c!])
      expect(await metric(n, "narad_produce_ingested_for_peers_records_total")).toBe(0);
  });

  it("a member that turns Decommissioning between admission and the append forwards: nothing enters its WAL", async () => {
    const tc = clusters.create();
    const { mc } = tc;
    // Node a's view flips a to Decommissioning in the microtask right after
    // the produce route's admission read it as Active, so the flip lands in
    // the route's await between admission and the WAL append (where a
    // continuous producer once raced a scale-down).
    let armed = false;
    let flippedAfterAdmission = false;
    const flipAfterAdmission = (id: string, view: Metastore): Metastore => {
      if (id !== "a") return view;
      return new Proxy(view, {
        get(target, prop, receiver) {
          if (prop !== "members") return Reflect.get(target, prop, receiver);
          return () => {
            const members = target.members();
            if (armed && (new Error().stack ?? "").includes("admit")) {
              armed = false;
              flippedAfterAdmission = true;
              queueMicrotask(() => mc.setState("a", "Decommissioning"));
            }
            return members;
          };
        },
      });
    };
    const [a, b, c] = await tc.startAll(["a", "b", "c"], { metastore: flipAfterAdmission });
    expect((await req(a!, "POST", "/v1/topics", { name: "t", partitions: 3 })).status).toBe(201);
    const before = await walNextSeq(a!);
    armed = true;
    const r = await req(a!, "POST", "/v1/topics/t/produce?key=k0", JSON.stringify({ id: 0 }));
    expect(flippedAfterAdmission).toBe(true);
    expect(r.status, r.text).toBe(202);
    expect(await walNextSeq(a!)).toBe(before);
    expect(
      (await metric(b!, "narad_produce_ingested_for_peers_records_total")) +
        (await metric(c!, "narad_produce_ingested_for_peers_records_total")),
    ).toBe(1);
  });
});
