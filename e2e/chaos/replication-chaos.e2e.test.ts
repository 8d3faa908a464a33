// Replication chaos on the local platform with the real operator: for
// NARAD_REPLICATION_CHAOS_SECONDS (default 90; the acceptance run is 600)
// a seeded loop (NARAD_REPLICATION_CHAOS_SEED, printed) of broker faults under
// continuous acks=all produce (single records and batches, a ledger of every
// 200 with its offset) and queue consumption (consume → ack, a ledger of
// every delivery), on three brokers and a NaradTopic at replicationFactor 3,
// minInsyncReplicas 2. One broker at a time, every 6–16 s, once the three
// pods are Ready (the first three faults are one of each kind, so a short run
// has them all; then 40 % / 20 % / 40 %):
//   - kill -9 (the node agent restarts it within the grace: no election);
//   - kill -9 and its volume's contents deleted (it comes back empty on a new
//     volume id; the operator re-elects what it led; it catches up): only
//     when every ISR is full, since the guarantee is for the loss of any one
//     broker with its volume;
//   - a crash loop: kill -9 of every restart until the member is Down and the
//     operator elected new leaders for what it led, then it comes back on its
//     own volume and truncates what it alone had.
// At the end: every record answered 200 is stored exactly once, at its offset;
// every one is delivered; the replicas are byte-identical; under-replicated 0.
// Numbers go to stderr ("replication-chaos-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prng } from "../../broker/src/testing/prng.ts";
import { waitFor } from "../operator/harness.ts";
import { type ReplicatedCluster, startReplicatedCluster } from "../operator/replication-cluster.ts";
import {
  AckingConsumer,
  AcksAllProducer,
  checkAcksAllLedger,
  compareReplicas,
  spread,
} from "../operator/replication-ledger.ts";
import { stderrLog } from "../platform/log.ts";

const log = stderrLog("replication-chaos-e2e");
const NS = "repl-chaos";
const NAME = "rc";
const TOPIC = "chaos";
const PARTITIONS = 6;
const GROUP = "ledger";
const SECONDS = Number(process.env["NARAD_REPLICATION_CHAOS_SECONDS"] ?? "90");
const SEED = Number(process.env["NARAD_REPLICATION_CHAOS_SEED"] ?? "719");
const BROKERS = [`${NAME}-0`, `${NAME}-1`, `${NAME}-2`];
/** A kill -9 restart (1 s backoff + start) stays within it; a crash loop goes past it. */
const DOWN_GRACE_SECONDS = 10;

let c: ReplicatedCluster;

beforeAll(async () => {
  c = await startReplicatedCluster({
    suite: "replication-chaos",
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

async function allReady(timeoutMs: number): Promise<void> {
  await waitFor(async () => (await c.s.pods()).filter((p) => p.ready).length === 3, {
    timeoutMs,
    what: "all three brokers Ready",
    intervalMs: 250,
  });
}

describe("replication chaos", () => {
  it(
    `${SECONDS} s of kill -9, volume deletions and crash loops under acks=all: nothing acknowledged lost or stored twice`,
    async () => {
      log(`seed ${SEED} (NARAD_REPLICATION_CHAOS_SEED reproduces the schedule), ${SECONDS} s`);
      const r = prng(SEED);
      const producer = new AcksAllProducer({
        tag: "rc",
        topic: TOPIC,
        ips: c.readyIps,
        headers: c.s.headers,
        workers: PARTITIONS,
        pinWorkers: PARTITIONS,
      });
      const batches = new AcksAllProducer({
        tag: "rcb",
        topic: TOPIC,
        ips: c.readyIps,
        headers: c.s.headers,
        workers: PARTITIONS,
        pinWorkers: PARTITIONS,
        batch: 10,
        pauseMs: 100,
      });
      const consumer = new AckingConsumer({
        topic: TOPIC,
        group: GROUP,
        ips: c.readyIps,
        headers: c.s.headers,
        workers: 6,
      });
      const counts = { kills: 0, wipes: 0, crashLoops: 0 };
      type Kind = "kill" | "wipe" | "crash-loop";
      /** Every fault: when, what, and the partitions the victim led then. */
      const faults: Array<{ atMs: number; kind: Kind; victim: string; led: number[] }> = [];
      const firstKinds: Kind[] = ["wipe", "crash-loop", "kill"];
      for (let i = firstKinds.length - 1; i > 0; i--) {
        const j = r.int(i + 1);
        [firstKinds[i], firstKinds[j]] = [firstKinds[j] as Kind, firstKinds[i] as Kind];
      }
      const recoveries: number[] = [];
      const elections: number[] = [];
      const t0 = Date.now();
      const end = t0 + SECONDS * 1000;
      try {
        await waitFor(async () => producer.acked.size >= 100, {
          timeoutMs: 60_000,
          what: "acknowledged records before the first fault",
          intervalMs: 200,
        });
        while (Date.now() < end) {
          await sleep(r.range(6_000, 16_000));
          if (Date.now() >= end) break;
          await allReady(180_000);
          // The first three faults are one of each kind (a short run covers all three), then 40%
          // volume deletions, 20% crash loops, 40% kills.
          const draw = r.next();
          const kind: Kind =
            faults.length < 3
              ? (firstKinds[faults.length] as Kind)
              : draw < 0.4
                ? "wipe"
                : draw < 0.6
                  ? "crash-loop"
                  : "kill";
          const recs = await c.records();
          const leaders = BROKERS.filter((b) => recs.some((a) => a.leader === b));
          // A crash loop is about a leader going Down: it picks one that leads.
          const victim = kind === "crash-loop" && leaders.length > 0 ? r.pick(leaders) : r.pick(BROKERS);
          const fault = (kind: Kind) =>
            faults.push({
              atMs: Date.now(),
              kind,
              victim,
              led: recs.filter((a) => a.leader === victim).map((a) => a.partition),
            });
          const at = `${((Date.now() - t0) / 1000).toFixed(0)} s`;
          if (kind === "wipe") {
            // Only one volume lost at a time: the others must hold every partition in full.
            const tWait = Date.now();
            await c.waitFullyInSync(300_000, "every ISR full before a volume deletion");
            const waited = Date.now() - tWait;
            const oldVolume = (await c.volumeIds()).get(victim);
            const tKill = Date.now();
            fault("wipe");
            await c.killAndWipe(victim);
            await waitFor(async () => (await c.volumeIds()).get(victim) !== oldVolume, {
              timeoutMs: 120_000,
              what: `${victim}'s new volume id recorded`,
              intervalMs: 100,
            });
            counts.wipes++;
            await c.waitFullyInSync(300_000, `${victim} caught up on its new volume`);
            recoveries.push(Date.now() - tKill);
            log(
              `${at}: kill -9 + volume deleted: ${victim} (waited ${(waited / 1000).toFixed(1)} s for full ISRs); full again after ${((Date.now() - tKill) / 1000).toFixed(1)} s`,
            );
          } else if (kind === "crash-loop") {
            const before = await c.records();
            const led = before.filter((a) => a.leader === victim).map((a) => a.partition);
            fault("crash-loop");
            const loop = c.crashLoop(victim);
            const tKill = Date.now();
            try {
              await waitFor(
                async () => {
                  const now = await c.records();
                  return led.every((p) => (now[p]?.leaderEpoch ?? 0) > (before[p]?.leaderEpoch ?? 0));
                },
                { timeoutMs: 120_000, what: `new leaders for what ${victim} led`, intervalMs: 200 },
              );
              elections.push(Date.now() - tKill);
            } finally {
              await loop.stop();
            }
            counts.crashLoops++;
            log(
              `${at}: crash loop of ${victim} (${loop.kills.length} kills) until Down; ${led.length} partition(s) re-led after ${((Date.now() - tKill) / 1000).toFixed(1)} s`,
            );
          } else {
            const pid = c.pid(victim);
            if (pid === null) continue;
            fault("kill");
            process.kill(pid, "SIGKILL");
            counts.kills++;
            log(`${at}: kill -9 ${victim}`);
          }
        }
        await allReady(180_000);
        await c.waitFullyInSync(300_000, "every ISR full at the end");
        await sleep(3_000);
        await producer.stop();
        await batches.stop();
        const tEnd = Date.now();
        log(
          `after ${((tEnd - t0) / 1000).toFixed(0)} s: ${JSON.stringify(counts)}; singles: ${producer.summary()}; batches: ${batches.summary()}`,
        );
        const stalls = [...Array(PARTITIONS).keys()].map((p) =>
          Math.max(producer.stall(p, t0, tEnd), batches.stall(p, t0, tEnd)),
        );
        const silence = producer.longestSilence(t0, tEnd);
        log(
          `longest time without a 200 per partition: ${stalls.map((s) => `${(s / 1000).toFixed(1)} s`).join(", ")}; without any 200 (single records): ${(silence.gap / 1000).toFixed(1)} s from ${((silence.startMs - t0) / 1000).toFixed(1)} s; volume loss → every ISR full: ${spread(recoveries)}; crash loop → re-led: ${spread(elections)}`,
        );

        const ip = c.readyIps()[0] as string;
        const reports = [];
        for (const p of [producer, batches]) {
          const rep = await checkAcksAllLedger(p, {
            ip,
            topic: TOPIC,
            partitions: PARTITIONS,
            headers: c.s.headers,
          });
          log(rep.line);
          reports.push(rep);
        }
        await waitFor(
          async () =>
            [producer, batches].every((p) => [...p.acked.keys()].every((id) => consumer.delivered.has(id))),
          { timeoutMs: 180_000, what: "every acknowledged record delivered", intervalMs: 1000 },
        ).catch(() => undefined);
        await consumer.stop();
        const undelivered = [producer, batches].flatMap((p) =>
          [...p.acked.keys()].filter((id) => !consumer.delivered.has(id)),
        );
        log(`consumer: ${consumer.summary()}; undelivered acknowledged ${undelivered.length}`);

        // Per fault, the partitions its victim led: the time without a 200
        // across it (last 200 before the fault → first after), by kind.
        const byKind = new Map<Kind, number[]>();
        for (const f of faults)
          for (const p of f.led) {
            const before = Math.max(
              producer.lastAckBefore(p, f.atMs) ?? f.atMs,
              batches.lastAckBefore(p, f.atMs) ?? f.atMs,
            );
            const after = Math.min(
              producer.firstAckAfter(p, f.atMs) ?? Number.POSITIVE_INFINITY,
              batches.firstAckAfter(p, f.atMs) ?? Number.POSITIVE_INFINITY,
            );
            if (Number.isFinite(after)) byKind.set(f.kind, [...(byKind.get(f.kind) ?? []), after - before]);
          }
        log(
          `produce stall of the victim's led partitions, per fault kind: ${[...byKind].map(([k, v]) => `${k}: ${spread(v)}`).join("; ")}`,
        );
        // A redelivered record whose ack had been answered: how long before the next fault was that ack?
        const toNextFault = consumer.redeliveredAcks.map((k) => {
          const ackedAt = consumer.ackedAt.get(k) ?? 0;
          const next = faults.find((f) => f.atMs >= ackedAt);
          return next === undefined ? Number.POSITIVE_INFINITY : next.atMs - ackedAt;
        });
        log(
          `redelivered after an answered ack: ${toNextFault.length}, acked this long before the next fault: ${spread(toNextFault.filter(Number.isFinite))}; with no fault after the ack: ${toNextFault.filter((x) => !Number.isFinite(x)).length}`,
        );
        // The same, per fault and partition: how many, from which offsets, acked how long before.
        const groups = new Map<string, Array<(typeof consumer.redeliveredAckEvents)[number]>>();
        for (const e of consumer.redeliveredAckEvents) {
          const f = [...faults].reverse().find((x) => x.atMs <= e.atMs);
          const k = `${f === undefined ? "before any fault" : `${f.kind} ${f.victim} at ${((f.atMs - t0) / 1000).toFixed(0)} s`} p${e.partition}`;
          groups.set(k, [...(groups.get(k) ?? []), e]);
        }
        for (const [k, list] of groups) {
          const offsets = list.map((e) => e.offset);
          const f = faults.find((x) => k.includes(`at ${((x.atMs - t0) / 1000).toFixed(0)} s`));
          const ages = list.map((e) => (f?.atMs ?? e.atMs) - e.ackedAtMs);
          log(
            `  ${k}: ${list.length} redelivered, offsets ${Math.min(...offsets)}..${Math.max(...offsets)}, acked ${Math.min(...ages)}..${Math.max(...ages)} ms before the fault`,
          );
        }

        let cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
        await waitFor(
          async () => {
            cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
            return cmp.mismatches.length === 0;
          },
          { timeoutMs: 60_000, what: "byte-identical replicas", intervalMs: 1000 },
        ).catch(() => undefined);
        log(`replicas: ${cmp.lines.join("; ")}`);
        const t = await c.naradTopic();
        log(
          `epochs: ${(t?.status?.assignments ?? []).map((a) => `p${a.partition} ${a.leaderEpoch}`).join(", ")}; underReplicatedPartitions ${t?.status?.underReplicatedPartitions}`,
        );

        for (const rep of reports) {
          expect(rep.lost.slice(0, 10)).toEqual([]);
          expect(rep.duplicated.slice(0, 10)).toEqual([]);
          expect(rep.misplaced.slice(0, 10)).toEqual([]);
          expect(rep.conflicts.slice(0, 10)).toEqual([]);
          expect(rep.unknown.slice(0, 10)).toEqual([]);
        }
        expect(undelivered.slice(0, 10)).toEqual([]);
        expect(cmp.mismatches).toEqual([]);
        expect(t?.status?.underReplicatedPartitions).toBe(0);
      } finally {
        await producer.stop();
        await batches.stop();
        await consumer.stop();
      }
    },
    Math.max(600_000, SECONDS * 1000 + 900_000),
  );
});
