// The idempotent producer's contract (docs/idempotent-producer.md) against a
// real broker process: acks=all offsets, exact retries answered with their
// original result (also after kill -9), out_of_order_sequence, fencing by a
// re-initialised name (also after a restart), and the four ways the old
// idempotent path acknowledged records it then dropped. A ledger counts every
// acknowledged record: each must be stored exactly once, and nothing is
// stored twice.

import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BufferFullError, DeliveryInDoubtError, NaradClient, type NaradError } from "../../client/index.ts";
import { createTopic, readAll } from "./harness/client.ts";
import { isProduceBatch, type ProxiedRequest, startFaultProxy } from "./harness/fault-proxy.ts";
import { freePort, type RunningNarad, startNarad } from "./harness/process.ts";

let broker: RunningNarad;
let port: number;

beforeAll(async () => {
  port = await freePort();
  broker = await startNarad({ port, keepData: true });
});

afterAll(async () => {
  await broker?.stop();
  if (broker) rmSync(broker.dataDir, { recursive: true, force: true });
});

async function restart(): Promise<void> {
  await broker.kill9();
  broker = await startNarad({ port, dataDir: broker.dataDir, keepData: true });
}

async function initProducer(name?: string): Promise<{ producer_id: string; epoch: number }> {
  const res = await fetch(`${broker.url}/v1/producers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(name === undefined ? {} : { name }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { producer_id: string; epoch: number };
}

interface Answer {
  status: number;
  body: { results?: Array<{ partition: number; offset: number }>; code?: string; error?: string };
}

/** NDJSON produce-batch of `ids` (payload {id}), keyed by `key` or pinned to `partition`. */
async function batch(
  topic: string,
  ids: string[],
  opts: {
    key?: string;
    partition?: number;
    producer?: { id: string; epoch: number; seq: number };
    acks?: string;
  },
): Promise<Answer> {
  const lines = ids.map((id) =>
    JSON.stringify({
      ...(opts.key !== undefined ? { key: opts.key } : {}),
      ...(opts.partition !== undefined ? { partition: opts.partition } : {}),
      payload: { id },
    }),
  );
  const headers: Record<string, string> = { "content-type": "application/x-ndjson" };
  if (opts.producer !== undefined) {
    headers["narad-producer-id"] = opts.producer.id;
    headers["narad-producer-epoch"] = String(opts.producer.epoch);
    headers["narad-producer-seq"] = String(opts.producer.seq);
  }
  const res = await fetch(`${broker.url}/v1/topics/${topic}/produce-batch?acks=${opts.acks ?? "all"}`, {
    method: "POST",
    headers,
    body: `${lines.join("\n")}\n`,
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? {} : JSON.parse(text) };
}

/** Acknowledged ids per topic; check() compares them with what is stored. */
class Ledger {
  readonly acked = new Set<string>();
  record(ids: string[], a: Answer): void {
    if (a.status === 200 || a.status === 202) for (const id of ids) this.acked.add(id);
  }
  async check(topic: string): Promise<{ acked: number; stored: number; missing: number; twice: number }> {
    const counts = new Map<string, number>();
    for (const m of await readAll(broker.url, topic)) {
      const id = (m.payload as { id: string }).id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    let missing = 0;
    let twice = 0;
    for (const id of this.acked) if ((counts.get(id) ?? 0) === 0) missing++;
    for (const c of counts.values()) if (c > 1) twice += c - 1;
    return { acked: this.acked.size, stored: counts.size, missing, twice };
  }
}

const ids = (prefix: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => `${prefix}${from + i}`);

async function logEnd(topic: string, partition: number): Promise<number> {
  const info = (await (await fetch(`${broker.url}/v1/topics/${topic}?partition=${partition}`)).json()) as {
    partition_stats: Array<{ next_offset: number }>;
  };
  return info.partition_stats[0]!.next_offset;
}

/** Waits until the dispatcher has emptied the WAL (so reads see every committed record). */
async function settled(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const s = (await (await fetch(`${broker.url}/admin/v1/status`)).json()) as { drained: boolean };
    const pending = s.drained ? 0 : 1;
    if (pending === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("idempotent producer contract (one broker process)", () => {
  it("three keyed records land on one partition in one batch; an exact retry returns the same offsets; kill -9 keeps it", async () => {
    await createTopic(broker.url, "c1", 4);
    const p = await initProducer();
    const stamp = { id: p.producer_id, epoch: p.epoch, seq: 0 };
    const first = await batch("c1", ["a", "b", "c"], { key: "user-1", producer: stamp });
    expect(first.status).toBe(200);
    const results = first.body.results!;
    expect(new Set(results.map((r) => r.partition)).size).toBe(1);
    const partition = results[0]!.partition;
    expect(results.map((r) => r.offset)).toEqual([0, 1, 2]);
    const end = await logEnd("c1", partition);

    const retry = await batch("c1", ["a", "b", "c"], { key: "user-1", producer: stamp });
    expect(retry).toEqual(first);
    expect(await logEnd("c1", partition)).toBe(end);

    await restart();
    const afterCrash = await batch("c1", ["a", "b", "c"], { key: "user-1", producer: stamp });
    expect(afterCrash).toEqual(first);
    await settled();
    expect(await logEnd("c1", partition)).toBe(end);

    const gap = await batch("c1", ["e"], { key: "user-1", producer: { ...stamp, seq: 5 } });
    expect(gap.status).toBe(409);
    expect(gap.body.code).toBe("out_of_order_sequence");
    const next = await batch("c1", ["d"], { key: "user-1", producer: { ...stamp, seq: 3 } });
    expect(next.body.results).toEqual([{ partition, offset: 3 }]);
  });

  it("a second producer with the same name fences the first, also after a restart and on a partition the new one never wrote", async () => {
    await createTopic(broker.url, "c2", 2);
    const ledger = new Ledger();
    const a = await initProducer("billing");
    const w1 = await batch("c2", ["a0"], {
      partition: 0,
      producer: { id: a.producer_id, epoch: a.epoch, seq: 0 },
    });
    ledger.record(["a0"], w1);
    expect(w1.status).toBe(200);
    const b = await initProducer("billing");
    expect(b).toEqual({ producer_id: a.producer_id, epoch: a.epoch + 1 });
    const w2 = await batch("c2", ["b0"], {
      partition: 0,
      producer: { id: b.producer_id, epoch: b.epoch, seq: 0 },
    });
    ledger.record(["b0"], w2);
    expect(w2.status).toBe(200);
    // The zombie, before and after a restart, on both partitions.
    for (const phase of ["before", "after"]) {
      if (phase === "after") await restart();
      for (const partition of [0, 1]) {
        const id = `zombie-${phase}-${partition}`;
        const z = await batch("c2", [id], {
          partition,
          producer: { id: a.producer_id, epoch: a.epoch, seq: partition === 0 ? 1 : 0 },
        });
        ledger.record([id], z);
        expect(z.status).toBe(409);
        expect(z.body.code).toBe("producer_fenced");
      }
    }
    await settled();
    expect(await ledger.check("c2")).toEqual({ acked: 2, stored: 2, missing: 0, twice: 0 });
  });

  // Bug 1 of #20: a zombie after a broker restart got 202 and the owner dropped its records.
  it("bug: a zombie after a restart is refused, never acknowledged and dropped", async () => {
    await createTopic(broker.url, "zombie", 1);
    const ledger = new Ledger();
    const old = await initProducer("worker");
    const w = await batch("zombie", ["o0"], {
      partition: 0,
      producer: { id: old.producer_id, epoch: old.epoch, seq: 0 },
    });
    ledger.record(["o0"], w);
    const fresh = await initProducer("worker");
    ledger.record(
      ["n0"],
      await batch("zombie", ["n0"], {
        partition: 0,
        producer: { id: fresh.producer_id, epoch: fresh.epoch, seq: 0 },
      }),
    );
    await restart();
    const z = await batch("zombie", ["o1", "o2"], {
      partition: 0,
      producer: { id: old.producer_id, epoch: old.epoch, seq: 1 },
    });
    ledger.record(["o1", "o2"], z);
    await settled();
    expect(await ledger.check("zombie")).toMatchObject({ missing: 0, twice: 0 });
    expect(z.status).toBe(409);
  });

  // Bug 2: the same producer id and epoch reused by a second instance: 3 of 4 answered ok and not stored.
  it("bug: a reused (id, epoch) is refused, not answered ok for records it does not store", async () => {
    await createTopic(broker.url, "reused", 1);
    const ledger = new Ledger();
    const p = await initProducer();
    for (const instance of ["first", "second"]) {
      for (let seq = 0; seq < 4; seq++) {
        const id = `${instance}-${seq}`;
        const a = await batch("reused", [id], {
          partition: 0,
          producer: { id: p.producer_id, epoch: p.epoch, seq },
        });
        ledger.record([id], a);
      }
    }
    await settled();
    const c = await ledger.check("reused");
    expect(c).toEqual({ acked: 4, stored: 4, missing: 0, twice: 0 });
  });

  // Bug 3: batch k+1 committing before batch k made ~976 of batch k "duplicates" (2,000 accepted, 1,024 stored).
  it("bug: batch k+1 before batch k: k+1 is refused out of order (retriable after k), nothing acknowledged is dropped", async () => {
    await createTopic(broker.url, "reorder", 1);
    const ledger = new Ledger();
    const p = await initProducer();
    const stamp = (seq: number) => ({ partition: 0, producer: { id: p.producer_id, epoch: p.epoch, seq } });
    const k1 = ids("k1-", 1000);
    const k0 = ids("k0-", 1000);
    const early = await batch("reorder", k1, stamp(1000));
    ledger.record(k1, early);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe("out_of_order_sequence");
    const k = await batch("reorder", k0, stamp(0));
    ledger.record(k0, k);
    expect(k.status).toBe(200);
    const again = await batch("reorder", k1, stamp(1000));
    ledger.record(k1, again);
    expect(again.body.results?.[0]).toEqual({ partition: 0, offset: 1000 });
    // The old window treated seqs > 1,024 below the highest as duplicates: a retry of batch k is exact here.
    const retryK = await batch("reorder", k0, stamp(0));
    expect(retryK).toEqual(k);
    await settled();
    expect(await ledger.check("reorder")).toEqual({ acked: 2000, stored: 2000, missing: 0, twice: 0 });
  });

  // Bug 4: sequences advanced at seal, so re-sending a batch that failed after its retries stored it twice.
  it("bug: re-sending a batch that failed after its retries stores it once (client)", async () => {
    await createTopic(broker.url, "resend", 2);
    // Drops the first produce-batch answer, after the broker stored the batch.
    let drops = 1;
    const proxy = await startFaultProxy(broker.url, { dropAnswer: (r) => isProduceBatch(r) && drops-- > 0 });
    const client = new NaradClient({ urls: [proxy.url], retries: 0, timeoutMs: 10_000 });
    try {
      const p = client.producer("resend", { idempotent: true, lingerMs: 0, batchSize: 100 });
      const payloads = ids("r", 5);
      const send = async () => {
        const sent = [];
        for (const id of payloads) sent.push(await p.send({ id }, { partition: 1 }));
        return Promise.allSettled(sent.map((s) => s.delivered));
      };
      const first = await send();
      expect(first.every((r) => r.status === "rejected")).toBe(true);
      await p.flush().catch(() => {});
      const second = await send();
      expect(second.every((r) => r.status === "fulfilled")).toBe(true);
      const offsets = second.map(
        (r) => (r as PromiseFulfilledResult<{ offset?: number | null }>).value.offset,
      );
      expect(offsets).toEqual([0, 1, 2, 3, 4]);
      await p.close();
      await settled();
      const stored = await readAll(broker.url, "resend");
      expect(stored.map((m) => (m.payload as { id: string }).id).sort()).toEqual(payloads);
      expect(proxy.dropped).toBe(1);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  // #20's last item: batch k failed for good while batch k+1 was already numbered after it.
  // Before, k was reported failed at once; if it had been stored, the application's re-send
  // (new seqs) stored it twice. The application here re-sends every rejected record; the
  // partition read back must hold every record exactly once.
  describe("a batch k that failed for good with k+1 numbered after it, every rejected record re-sent", () => {
    const deliveryTimeoutMs = 1500;
    const isK = (r: ProxiedRequest, epoch?: string) =>
      isProduceBatch(r) &&
      r.headers["narad-producer-seq"] === "0" &&
      (epoch === undefined || r.headers["narad-producer-epoch"] === epoch);

    async function run(
      topic: string,
      plan: (t0: number) => Parameters<typeof startFaultProxy>[1],
    ): Promise<{
      counts: Map<string, number>;
      firstRound: PromiseSettledResult<{ offset?: number | null }>[];
      resent: number;
      proxy: { dropped: number; droppedRequests: number };
    }> {
      await createTopic(broker.url, topic, 1);
      const t0 = Date.now();
      const proxy = await startFaultProxy(broker.url, plan(t0));
      // Transport retries until the delivery timeout (the "retries spent" path is the unit tests').
      const client = new NaradClient({ urls: [proxy.url], retries: 100, backoffMs: 20, timeoutMs: 10_000 });
      try {
        const p = client.producer(topic, {
          idempotent: true,
          producerName: `app-${topic}`,
          batchSize: 5,
          lingerMs: 0,
          deliveryTimeoutMs,
        });
        await p.init();
        const send = async (list: string[]) => {
          const sent = [];
          for (const id of list) sent.push(await p.send({ id }, { partition: 0 }));
          return Promise.allSettled(sent.map((x) => x.delivered));
        };
        let todo = ids(`${topic}-`, 15); // k = seqs 0-4, k+1 = 5-9, k+2 = 10-14
        const firstRound = await send(todo);
        let resent = 0;
        let round = firstRound;
        for (let i = 0; i < 5; i++) {
          const rejected = todo.filter((_, j) => round[j]!.status === "rejected");
          for (const r of round)
            if (r.status === "rejected") {
              const e = r.reason as NaradError;
              // Every failure says whether a re-send is safe.
              expect(e.notStored || e.inDoubt, String(e)).toBe(true);
            }
          if (rejected.length === 0) break;
          await p.flush().catch(() => {});
          resent += rejected.length;
          todo = rejected;
          round = await send(todo);
        }
        await p.close();
        await settled();
        const counts = new Map<string, number>();
        for (const m of await readAll(broker.url, topic)) {
          const id = (m.payload as { id: string }).id;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        return { counts, firstRound, resent, proxy };
      } finally {
        await client.close();
        await proxy.close();
      }
    }

    const exactlyOnce = (topic: string, counts: Map<string, number>) => {
      expect([...counts.keys()].sort()).toEqual(ids(`${topic}-`, 15).sort());
      const twice = [...counts.values()].reduce((n, c) => n + c - 1, 0);
      expect(twice, "records stored more than once").toBe(0);
    };

    it("k stored, its answers dropped until its delivery timeout, k+1 through: k resolves with its offsets", async () => {
      const r = await run("held-stored", (t0) => ({
        dropAnswer: (q) => isK(q) && Date.now() - t0 < deliveryTimeoutMs + 200,
      }));
      console.log(`held-stored: dropped answers=${r.proxy.dropped}, re-sent=${r.resent}`);
      expect(r.proxy.dropped).toBeGreaterThan(0);
      exactlyOnce("held-stored", r.counts);
      // k was held, not reported: its exact retry got the original offsets.
      const kOffsets = r.firstRound
        .slice(0, 5)
        .map((x) => (x.status === "fulfilled" ? x.value.offset : "rejected"));
      expect(kOffsets).toEqual([0, 1, 2, 3, 4]);
    });

    it("k not stored, its requests dropped until its delivery timeout: stored by its exact retry or re-sent, once", async () => {
      const r = await run("held-lost", (t0) => ({
        dropRequest: (q) => isK(q) && Date.now() - t0 < deliveryTimeoutMs + 200,
      }));
      console.log(`held-lost: dropped requests=${r.proxy.droppedRequests}, re-sent=${r.resent}`);
      expect(r.proxy.droppedRequests).toBeGreaterThan(0);
      exactlyOnce("held-lost", r.counts);
    });

    it("k not stored and never reaching the broker in its window: DeliveryInDoubtError, the re-send stored once", async () => {
      let epoch: string | undefined;
      const r = await run("held-doubt", () => ({
        // Only k's first identity: after the re-init its records go through.
        dropRequest: (q) => {
          if (isProduceBatch(q)) epoch ??= q.headers["narad-producer-epoch"];
          return isK(q, epoch);
        },
      }));
      console.log(`held-doubt: dropped requests=${r.proxy.droppedRequests}, re-sent=${r.resent}`);
      const k = r.firstRound[0]!;
      expect(k.status).toBe("rejected");
      expect((k as PromiseRejectedResult).reason).toBeInstanceOf(DeliveryInDoubtError);
      exactlyOnce("held-doubt", r.counts);
    });
  });

  // Abandoned attempts that land late (the proxy holds them past the client's timeouts and then
  // forwards them). Batch k-1 (seqs 0-4) never answers, so it ends in doubt; k (5-9) times out
  // while its first requests are held, then its retries are refused behind k-1; once k-1 leaves,
  // k is refused with nothing earlier pending and the producer re-initialises (an unnamed
  // producer: a new id, no fence on the old one). Then k-1's and k's held attempts reach the
  // broker under the old id: seq 0 is fresh there, seq 5 the next. Before, k was re-numbered
  // and stored under the new id and acknowledged, and stored a second time by its late attempt.
  // Two ways k gets there: every attempt of its first window held (k is held, then its exact
  // retry is refused: the "notStored after a refused held retry" path), or only its first
  // attempt held (k waits unheld, then triggers the re-init that used to re-number it).
  it.each([
    ["late-held", "every attempt of k's first window"],
    ["late-first", "only k's first attempt"],
  ])(
    "abandoned attempts landing after a re-init (%s: %s): nothing acknowledged or notStored is stored twice (unnamed)",
    async (topic) => {
      await createTopic(broker.url, topic, 1);
      const dt = 1000;
      let firstId: string | undefined;
      let kAttempts = 0;
      const t0 = Date.now();
      const proxy = await startFaultProxy(broker.url, {
        delayRequest: (q) => {
          if (!isProduceBatch(q)) return 0;
          firstId ??= q.headers["narad-producer-id"];
          if (q.headers["narad-producer-id"] !== firstId) return 0;
          const seq = q.headers["narad-producer-seq"];
          if (seq === "0") return 5000; // k-1: every attempt lands late
          if (seq !== "5") return 0;
          kAttempts++;
          if (topic === "late-held") return Date.now() - t0 < dt + 300 ? 6000 : 0;
          return kAttempts === 1 ? 6000 : 0;
        },
      });
      const client = new NaradClient({ urls: [proxy.url], retries: 100, backoffMs: 20, timeoutMs: 250 });
      try {
        const p = client.producer(topic, {
          idempotent: true,
          batchSize: 5,
          lingerMs: 0,
          deliveryTimeoutMs: dt,
        });
        await p.init();
        const all = ids(`${topic}-`, 15);
        const sendAll = async (list: string[]) => {
          const out = [];
          for (const id of list) out.push({ id, s: await p.send({ id }, { partition: 0 }) });
          return out;
        };
        const first = await sendAll(all.slice(0, 5));
        await new Promise((r) => setTimeout(r, 300));
        const rest = await sendAll(all.slice(5));
        const settledAll = await Promise.allSettled([...first, ...rest].map((x) => x.s.delivered));
        await p.flush().catch(() => {});
        const acked = new Set<string>();
        const notStored: string[] = [];
        const inDoubt = new Set<string>();
        settledAll.forEach((r, i) => {
          const id = all[i]!;
          if (r.status === "fulfilled") acked.add(id);
          else {
            const e = r.reason as NaradError;
            expect(e.notStored !== e.inDoubt, String(e)).toBe(true);
            if (e.notStored) notStored.push(id);
            else inDoubt.add(id);
          }
        });
        // The application re-sends what it was told is not stored (and reads for the in-doubt ones).
        if (notStored.length > 0) {
          const again = await sendAll(notStored);
          for (const x of again) {
            await x.s.delivered;
            acked.add(x.id);
          }
        }
        await p.close();
        // Let the held attempts land.
        for (let i = 0; i < 200 && proxy.holding > 0; i++) await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setTimeout(r, 300));
        await settled();
        const counts = new Map<string, number>();
        for (const m of await readAll(broker.url, topic)) {
          const id = (m.payload as { id: string }).id;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        console.log(
          `${topic}: acked=${acked.size} notStored=${notStored.length} inDoubt=${inDoubt.size} ` +
            `deliveredLate=${proxy.deliveredLate} reinits=${p.metrics.reinits} stored=${[...counts.values()].reduce((a, b) => a + b, 0)}`,
        );
        expect(proxy.deliveredLate).toBeGreaterThan(0);
        expect(p.metrics.reinits).toBeGreaterThan(0);
        for (const id of acked) expect(counts.get(id) ?? 0, `acknowledged ${id}`).toBe(1);
        for (const id of inDoubt) expect(counts.get(id) ?? 0, `in doubt ${id}`).toBeLessThanOrEqual(1);
        expect(
          [...counts.values()].every((c) => c === 1),
          "a record stored twice",
        ).toBe(true);
      } finally {
        await client.close();
        await proxy.close();
      }
    },
    30_000,
  );

  it("client: acks=all deliveries carry offsets, acks=0 none; a full buffer raises BufferFull", async () => {
    await createTopic(broker.url, "cli", 1);
    const client = new NaradClient({ urls: [broker.url] });
    try {
      const all = client.producer("cli", { acks: "all", lingerMs: 0 });
      expect((await (await all.send({ id: "x" }, { partition: 0 })).delivered).offset).toBe(0);
      const zero = client.producer("cli", { acks: "0", lingerMs: 0 });
      const d = await (await zero.send({ id: "y" }, { partition: 0 })).delivered;
      expect(d.offset).toBeUndefined();
      const tiny = client.producer("cli", { maxBufferBytes: 200, maxBlockMs: 0, lingerMs: 0, acks: "all" });
      await tiny.send({ id: "z".repeat(150) }, { partition: 0 });
      await expect(tiny.send({ id: "w".repeat(150) }, { partition: 0 })).rejects.toBeInstanceOf(
        BufferFullError,
      );
      await tiny.close();
      await all.close();
      await zero.close();
    } finally {
      await client.close();
    }
  });
});
