// Replication end to end (local platform, real operator, real brokers): a
// broker that leads partitions is killed with kill -9 and its data volume's
// contents deleted, under continuous acks=all produce and queue consumption
// (consume → ack) through every Ready broker. Three brokers, a NaradTopic at
// replicationFactor 3, minInsyncReplicas 2.
//
// The node agent restarts the broker on the empty volume (a pod back on a new
// disk) within the Down grace: it reports a new volume id, the operator elects
// new leaders for the partitions it led (its ISR entries named the old
// volume), the brokers' followers take them over, and the broker rejoins as an
// empty follower of all six partitions, catches up and is added back to every
// ISR with its new volume id.
//
// Checked: every record answered 200 is stored exactly once, at the offset
// its answer gave (no offset answered twice); consumption resumes and every
// acknowledged record is delivered; a redelivery is counted apart when the
// consumer's ack had been answered; the replicas end byte-identical;
// status.underReplicatedPartitions returns to 0. Measured: the read and
// consume gap of the led partitions (first successful read through the new
// leader), the produce stall, the time until the ISR is full again.
// Numbers go to stderr ("replication-volume-loss-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { waitFor } from "./harness.ts";
import { BROKER_PORT } from "./load.ts";
import { type ReplicatedCluster, startReplicatedCluster } from "./replication-cluster.ts";
import {
  AckingConsumer,
  AcksAllProducer,
  checkAcksAllLedger,
  compareReplicas,
} from "./replication-ledger.ts";

const log = stderrLog("replication-volume-loss-e2e");
const NS = "repl-vol";
const NAME = "rv";
const TOPIC = "ledger";
const PARTITIONS = 6;
const GROUP = "ledger";
/** Data written before the fault (1 KB records), which the emptied broker copies back: NARAD_REPLICATION_PREFILL_MB. */
const PREFILL_MB = Number(process.env["NARAD_REPLICATION_PREFILL_MB"] ?? "12");
/** A restarted broker (1 s backoff + start) comes back well within it: the volume change, not Down, re-elects. */
const DOWN_GRACE_SECONDS = 30;

let c: ReplicatedCluster;

beforeAll(async () => {
  c = await startReplicatedCluster({
    suite: "replication-volume-loss",
    log,
    namespace: NS,
    name: NAME,
    topic: TOPIC,
    partitions: PARTITIONS,
    downGraceSeconds: DOWN_GRACE_SECONDS,
  });
}, 900_000);

afterAll(async () => {
  await c?.stop();
});

/**
 * Reads of `partitions` at offset 0 through `ip` every 100 ms: per partition,
 * when reads failed and when they worked again (a 200 holding the record at
 * offset 0). A 200 without it (a partition served from an empty copy) is
 * counted apart: it must never happen.
 */
class ReadProbe {
  readonly failedAt = new Map<number, number>();
  readonly backAt = new Map<number, number>();
  readonly emptyAnswers: string[] = [];
  #running = true;
  readonly #loop: Promise<void>;
  constructor(ip: () => string, partitions: number[], since: number) {
    this.#loop = (async () => {
      while (this.#running) {
        for (const p of partitions) {
          const r = await fetch(
            `http://${ip()}:${BROKER_PORT}/v1/topics/${TOPIC}/records?partition=${p}&offset=0&limit=1`,
            { headers: c.s.headers(), signal: AbortSignal.timeout(2_000) },
          ).catch(() => undefined);
          let body: { records: Array<{ offset: number }>; high_watermark: number } | undefined;
          if (r?.status === 200) body = (await r.json().catch(() => undefined)) as typeof body;
          else await r?.body?.cancel();
          const now = Date.now();
          if (now < since) continue;
          if (r?.status === 200 && body?.records[0]?.offset !== 0)
            this.emptyAnswers.push(
              `p${p} at +${now - since} ms: hwm ${body?.high_watermark}, ${body?.records.length} record(s)`,
            );
          if (r?.status !== 200 || body?.records[0]?.offset !== 0) {
            if (!this.failedAt.has(p)) this.failedAt.set(p, now);
          } else if (this.failedAt.has(p) && !this.backAt.has(p)) this.backAt.set(p, now);
        }
        await sleep(100);
      }
    })();
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

describe("replication: a broker and its volume lost under acks=all load", () => {
  it("loses nothing acknowledged, resumes consumption, re-replicates to the empty volume", async () => {
    // What the emptied broker will have to copy back.
    const tFill = Date.now();
    const prefill = new AcksAllProducer({
      tag: "pf",
      topic: TOPIC,
      ips: c.readyIps,
      headers: c.s.headers,
      workers: 3,
      batch: 200,
      payloadBytes: 1000,
      limit: PREFILL_MB * 1000,
      pauseMs: 0,
    });
    await waitFor(async () => prefill.acked.size >= PREFILL_MB * 1000, {
      timeoutMs: 300_000,
      what: `${PREFILL_MB} MB written before the fault`,
      intervalMs: 250,
    });
    await prefill.stop();
    log(`prefill: ${prefill.summary()} in ${((Date.now() - tFill) / 1000).toFixed(1)} s`);
    // The consumer starts after the prefill (which the ledger and the replica comparison still check).
    const seek = await fetch(
      `http://${c.readyIps()[0]}:${BROKER_PORT}/v1/topics/${TOPIC}/groups/${GROUP}/seek`,
      {
        method: "POST",
        headers: { ...c.s.headers(), "content-type": "application/json" },
        body: JSON.stringify({ to: "latest" }),
      },
    );
    expect(seek.status).toBe(200);
    const producer = new AcksAllProducer({
      tag: "vl",
      topic: TOPIC,
      ips: c.readyIps,
      headers: c.s.headers,
      workers: 6,
    });
    const consumer = new AckingConsumer({
      topic: TOPIC,
      group: GROUP,
      ips: c.readyIps,
      headers: c.s.headers,
      workers: 3,
    });
    let probe: ReadProbe | undefined;
    try {
      await waitFor(async () => producer.acked.size >= 200, {
        timeoutMs: 60_000,
        what: "200 acknowledged records before the fault",
        intervalMs: 200,
      });
      await sleep(3_000);
      const before = await c.records();
      const victim = before[0]?.leader as string;
      const led = before.filter((a) => a.leader === victim).map((a) => a.partition);
      const oldVolume = (await c.volumeIds()).get(victim);
      const witness = before.find((a) => a.leader !== victim)?.leader as string;
      log(`victim ${victim} leads partitions ${led.join(",")} on volume ${oldVolume}; ${producer.summary()}`);

      const t0 = Date.now();
      probe = new ReadProbe(() => c.ipOf(witness) as string, led, t0);
      await c.killAndWipe(victim);

      // The operator sees the new volume and elects leaders for what it led.
      const elected = await waitFor(
        async () => {
          const r = await c.records();
          return led.every(
            (p) => r[p]?.leader !== victim && (r[p]?.leaderEpoch ?? 0) > (before[p]?.leaderEpoch ?? 0),
          )
            ? r
            : undefined;
        },
        { timeoutMs: 90_000, what: "new leaders for the victim's partitions", intervalMs: 100 },
      );
      const tElected = Date.now();
      const newVolume = (await c.volumeIds()).get(victim);
      expect(newVolume).not.toBe(oldVolume);
      for (const p of led) expect(before[p]?.isr?.map((e) => e.member)).toContain(elected[p]?.leader);

      // Reads and consumption of the led partitions through the new leaders.
      await waitFor(async () => led.every((p) => probe?.backAt.has(p)), {
        timeoutMs: 60_000,
        what: "reads of the victim's partitions to work again",
        intervalMs: 100,
      });
      await waitFor(async () => led.every((p) => producer.firstAckAfter(p, tElected) !== undefined), {
        timeoutMs: 60_000,
        what: "acks=all answered for the victim's partitions again",
        intervalMs: 100,
      });
      await waitFor(async () => led.every((p) => consumer.firstDeliveryAfter(p, tElected) !== undefined), {
        timeoutMs: 60_000,
        what: "deliveries from the victim's partitions again",
        intervalMs: 100,
      });
      // The empty broker catches up and is back in every ISR with its new volume.
      await c.waitFullyInSync(180_000, "every ISR full again with the new volume");
      const tInSync = Date.now();
      await sleep(5_000);
      await producer.stop();

      const tEnd = Date.now();
      const secs = (ms: number | undefined) => `${((ms ?? Number.NaN) / 1000).toFixed(1)} s`;
      const readGaps = led.map((p) => `p${p} ${secs((probe?.backAt.get(p) ?? Number.NaN) - t0)}`);
      const stalls = led.map((p) => `p${p} ${secs(producer.stall(p, t0, tEnd))}`);
      const consumeGaps = led.map((p) => `p${p} ${secs(consumer.gap(p, t0, tEnd))}`);
      const others = [...Array(PARTITIONS).keys()].filter((p) => !led.includes(p));
      const otherStalls = others.map((p) => `p${p} ${secs(producer.stall(p, t0, tEnd))}`).join(", ");
      log(
        `kill+wipe → new leaders recorded ${secs(tElected - t0)}; read gap (kill → first read through the new leader) ${readGaps.join(", ")}; produce stall (longest time without a 200 after the kill) ${stalls.join(", ")} (the partitions it followed: ${otherStalls}); consume gap ${consumeGaps.join(", ")}; kill → every ISR full again ${secs(tInSync - t0)}`,
      );
      log(`producer: ${producer.summary()}`);
      log(
        `reads answered 200 without the partition's first record: ${probe?.emptyAnswers.length ?? 0} ${probe?.emptyAnswers.slice(0, 5).join("; ")}`,
      );
      expect(probe?.emptyAnswers ?? []).toEqual([]);

      // Every acknowledged record once, at its offset.
      for (const p of [prefill, producer]) {
        const report = await checkAcksAllLedger(p, {
          ip: c.ipOf(witness) as string,
          topic: TOPIC,
          partitions: PARTITIONS,
          headers: c.s.headers,
        });
        log(report.line);
        expect(report.lost.slice(0, 10)).toEqual([]);
        expect(report.duplicated.slice(0, 10)).toEqual([]);
        expect(report.misplaced.slice(0, 10)).toEqual([]);
        expect(report.conflicts.slice(0, 10)).toEqual([]);
        expect(report.unknown.slice(0, 10)).toEqual([]);
      }

      // Consumption drains: every acknowledged record delivered.
      await waitFor(async () => [...producer.acked.keys()].every((id) => consumer.delivered.has(id)), {
        timeoutMs: 120_000,
        what: "every acknowledged record delivered",
        intervalMs: 500,
      }).catch(() => undefined);
      await consumer.stop();
      const undelivered = [...producer.acked.keys()].filter((id) => !consumer.delivered.has(id));
      const ages = consumer.ackAgesAt(t0);
      log(
        `consumer: ${consumer.summary()}; undelivered acknowledged ${undelivered.length}; redelivered after an answered ack: acked ${ages.length === 0 ? "-" : `${Math.min(...ages)}..${Math.max(...ages)} ms`} before the kill`,
      );
      expect(undelivered.slice(0, 10)).toEqual([]);

      // The replicas are byte-identical.
      let cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
      await waitFor(
        async () => {
          cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
          return cmp.mismatches.length === 0;
        },
        { timeoutMs: 30_000, what: "byte-identical replicas", intervalMs: 500 },
      ).catch(() => undefined);
      log(`replicas: ${cmp.lines.join("; ")}`);
      expect(cmp.mismatches).toEqual([]);
      expect((await c.naradTopic())?.status?.underReplicatedPartitions).toBe(0);
    } finally {
      await probe?.stop();
      await producer.stop();
      await consumer.stop();
    }
  });
});
