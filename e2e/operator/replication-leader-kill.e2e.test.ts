// Replication end to end (local platform, real operator, real brokers): the
// leader of a hot partition is killed with kill -9 while acks=all batches are
// in flight, NARAD_REPLICATION_KILL_ROUNDS times (default 2). Three brokers,
// a NaradTopic at replicationFactor 3, minInsyncReplicas 2; every batch is
// pinned to partition 0.
//
// Each round kills the partition's current leader and keeps killing what the
// node agent restarts for it (a crash loop) until the operator has marked it
// Down and elected another leader from the ISR; then it comes back on its own
// volume, truncates whatever it had appended above what the new leader holds
// (records of batches that were never answered), follows, and is added back
// to the ISR before the next round.
//
// Checked at the end: every record answered 200 is stored exactly once, at the
// offset its answer gave (no offset answered twice); the three replicas of
// each partition are byte-identical (segments concatenated). Measured per
// round: kill → new leader recorded, the produce stall, kill → ISR full.
// Numbers go to stderr ("replication-leader-kill-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { waitFor } from "./harness.ts";
import { type ReplicatedCluster, startReplicatedCluster } from "./replication-cluster.ts";
import { AcksAllProducer, checkAcksAllLedger, compareReplicas, replicaEpochs } from "./replication-ledger.ts";

const log = stderrLog("replication-leader-kill-e2e");
const NS = "repl-kill";
const NAME = "rk";
const TOPIC = "hot";
const PARTITIONS = 2;
const HOT = 0;
const ROUNDS = Number(process.env["NARAD_REPLICATION_KILL_ROUNDS"] ?? "2");
/** Short: each round waits for the Down, which is what elects. */
const DOWN_GRACE_SECONDS = 5;

let c: ReplicatedCluster;

beforeAll(async () => {
  c = await startReplicatedCluster({
    suite: "replication-leader-kill",
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

describe("replication: the leader killed mid-commit, repeatedly", () => {
  it(`${ROUNDS} round(s): nothing acknowledged lost or stored twice, replicas byte-identical`, async () => {
    const producer = new AcksAllProducer({
      tag: "lk",
      topic: TOPIC,
      ips: c.readyIps,
      headers: c.s.headers,
      workers: 4,
      batch: 20,
      partition: HOT,
      pauseMs: 0,
    });
    try {
      await waitFor(async () => producer.acked.size >= 400, {
        timeoutMs: 60_000,
        what: "400 acknowledged records before the first kill",
        intervalMs: 200,
      });
      for (let round = 1; round <= ROUNDS; round++) {
        await c.waitFullyInSync(180_000, `round ${round}: every ISR full before the kill`);
        const before = (await c.records())[HOT]!;
        const victim = before.leader as string;
        await waitFor(async () => producer.inFlight >= 2, {
          timeoutMs: 30_000,
          what: "acks=all batches in flight",
          intervalMs: 5,
        });
        const inFlight = producer.inFlight;
        const crash = c.crashLoop(victim);
        const t0 = Date.now();
        let tElected: number;
        let after: typeof before;
        try {
          after = await waitFor(
            async () => {
              const a = (await c.records())[HOT];
              return a !== undefined && (a.leaderEpoch ?? 0) > (before.leaderEpoch ?? 0) ? a : undefined;
            },
            {
              timeoutMs: 120_000,
              what: `round ${round}: a new leader for partition ${HOT}`,
              intervalMs: 100,
            },
          );
          tElected = Date.now();
        } finally {
          await crash.stop();
        }
        expect(after.leader).not.toBe(victim);
        expect(before.isr?.map((e) => e.member)).toContain(after.leader);
        await waitFor(async () => producer.firstAckAfter(HOT, tElected) !== undefined, {
          timeoutMs: 60_000,
          what: `round ${round}: acks=all answered by the new leader`,
          intervalMs: 100,
        });
        const tAck = producer.firstAckAfter(HOT, tElected) as number;
        await c.waitFullyInSync(180_000, `round ${round}: ${victim} back in the ISR`);
        const tInSync = Date.now();
        log(
          `round ${round}: killed leader ${victim} (epoch ${before.leaderEpoch}) with ${inFlight} batch(es) in flight, ${crash.kills.length} kill(s); new leader ${after.leader} at epoch ${after.leaderEpoch} recorded ${((tElected - t0) / 1000).toFixed(1)} s after the kill; produce stall ${((producer.stall(HOT, t0, tAck) ?? 0) / 1000).toFixed(1)} s; ISR full again ${((tInSync - t0) / 1000).toFixed(1)} s after the kill; ${producer.summary()}`,
        );
      }
      await sleep(2_000);
      await producer.stop();
      await c.waitFullyInSync(120_000, "every ISR full at the end");

      const report = await checkAcksAllLedger(producer, {
        ip: c.readyIps()[0] as string,
        topic: TOPIC,
        partitions: PARTITIONS,
        headers: c.s.headers,
      });
      log(report.line);

      const records = await c.records();
      let cmp = await compareReplicas(records, c.dataDir, TOPIC);
      await waitFor(
        async () => {
          cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
          return cmp.mismatches.length === 0;
        },
        { timeoutMs: 30_000, what: "byte-identical replicas", intervalMs: 500 },
      ).catch(() => undefined);
      log(`replicas: ${cmp.lines.join("; ")}`);
      for (const m of records[HOT]?.replicas ?? [])
        log(
          `${m}: epochs ${(await replicaEpochs(await c.dataDir(m), TOPIC, HOT)).map((e) => `${e.epoch}@${e.start}`).join(" ")}; truncations ${(await c.brokerLogLines(m, "follower truncated a divergent tail")).map((l) => `${l["from"]}→${l["to"]}`).join(", ") || "none"}`,
        );

      expect(report.lost.slice(0, 10)).toEqual([]);
      expect(report.duplicated.slice(0, 10)).toEqual([]);
      expect(report.misplaced.slice(0, 10)).toEqual([]);
      expect(report.conflicts.slice(0, 10)).toEqual([]);
      expect(report.unknown.slice(0, 10)).toEqual([]);
      expect(cmp.mismatches).toEqual([]);
    } finally {
      await producer.stop();
    }
  });
});
