// Replication end to end (local platform, real operator, real brokers): the
// leader of a partition is cut off from its followers, the operator and the
// API server by a network partition (e2e/platform/loopback-partition.ts:
// iptables on its pod address and on its process's cgroup; SIGSTOP would be a
// pause, not a partition: the process would not run at all), while clients on
// both sides keep producing acks=all to that partition: one through the
// isolated leader itself, one through the two other brokers. The client of
// the isolated leader is on its side of the cut: its requests in flight at
// the cut hang (their connections are dropped), and a second client starts
// right after the cut, on connections the cut lets through.
//
// The kubelet's probes are cut too at first (a pod whose network is broken
// fails them): the pod goes not Ready, the operator's status probes fail, the
// member goes Down after the grace and the operator elects another leader
// from the ISR. Then the node agent is let through again (so the liveness
// probe does not restart the isolated broker), and the broker stays cut off
// from everything else for ACKS_ALL_WAIT_SECONDS + a margin: its acks=all
// requests must end without a 200. Then the partition heals: the old leader
// learns the new record, truncates what it appended alone, follows, and is
// added back to the ISR.
//
// Checked: no request sent to the isolated leader after the cut is answered
// 200 while it is cut off, and some were sent and ended (503 commit_timeout); every 200 of either client is stored once at the
// offset it gave, and no offset was answered to two records (the epoch of
// each acknowledged offset is read from the final leader-epochs file: every
// 200 of the isolated leader is below the new epoch's start); the three
// replicas end byte-identical. Numbers go to stderr
// ("replication-isolation-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { cutLoopbackPartition, type LoopbackPartition } from "../platform/loopback-partition.ts";
import { waitFor } from "./harness.ts";
import { type ReplicatedCluster, startReplicatedCluster } from "./replication-cluster.ts";
import { AcksAllProducer, checkAcksAllLedger, compareReplicas, replicaEpochs } from "./replication-ledger.ts";

const log = stderrLog("replication-isolation-e2e");
const NS = "repl-iso";
const NAME = "ri";
const TOPIC = "cut";
const PARTITIONS = 3;
const P = 0;
const DOWN_GRACE_SECONDS = 5;
/** The brokers' acks=all wait (acksAllTimeoutMs): a request of the isolated leader ends by then. */
const ACKS_ALL_WAIT_SECONDS = 30;

let c: ReplicatedCluster;
let cut: LoopbackPartition | undefined;

beforeAll(async () => {
  c = await startReplicatedCluster({
    suite: "replication-isolation",
    log,
    namespace: NS,
    name: NAME,
    topic: TOPIC,
    partitions: PARTITIONS,
    downGraceSeconds: DOWN_GRACE_SECONDS,
  });
}, 900_000);

afterAll(async () => {
  await cut?.heal();
  await c?.stop();
});

describe("replication: an isolated leader", () => {
  it("stops acknowledging; another leader takes over; no offset acknowledged twice; it truncates and rejoins", async () => {
    const before = (await c.records())[P]!;
    const leader = before.leader as string;
    const leaderIp = c.ipOf(leader) as string;
    const others = (before.replicas ?? []).filter((m) => m !== leader);
    const otherIps = () => others.map((m) => c.ipOf(m)).filter((ip): ip is string => ip !== undefined);
    // Who led at which epoch, as the API server recorded it.
    const leaders = new Map<number, string>([[before.leaderEpoch ?? 0, leader]]);
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const a = (await c.records().catch(() => []))[P];
        if (a?.leader !== undefined && a.leader !== null && !leaders.has(a.leaderEpoch ?? 0))
          leaders.set(a.leaderEpoch ?? 0, a.leader);
        await sleep(100);
      }
    })();

    const viaLeaderOpts = {
      topic: TOPIC,
      ips: () => [leaderIp],
      headers: c.s.headers,
      workers: 3,
      partition: P,
      freshSockets: true,
    };
    // Before the cut; its requests in flight at the cut hang on connections the
    // cut drops (in doubt after the client's timeout).
    const viaLeader = new AcksAllProducer({ ...viaLeaderOpts, tag: "iso" });
    let viaLeaderCut: AcksAllProducer | undefined;
    const viaOthers = new AcksAllProducer({
      tag: "maj",
      topic: TOPIC,
      ips: otherIps,
      headers: c.s.headers,
      workers: 3,
      partition: P,
    });
    try {
      await waitFor(async () => viaLeader.acked.size >= 100 && viaOthers.acked.size >= 100, {
        timeoutMs: 60_000,
        what: "both clients acknowledged before the cut",
        intervalMs: 200,
      });
      const leaderPid = c.pid(leader) as number;
      const agentPid = c.s.platform.nodeAgent?.pid as number;
      cut = await cutLoopbackPartition({ ip: leaderIp, pid: leaderPid, exempt: [process.pid] });
      const tCut = Date.now();
      // A client on the leader's side of the cut: new requests, on connections opened after it.
      const stoppingBefore = viaLeader.stop();
      viaLeaderCut = new AcksAllProducer({ ...viaLeaderOpts, tag: "isc" });
      log(
        `cut ${leader} (${leaderIp}, pid ${leaderPid}) off; ${cut.cutConnections.length} connection(s) it had opened now dropped: ${cut.cutConnections.join(", ")}`,
      );

      const elected = await waitFor(
        async () => {
          const a = (await c.records())[P];
          return a !== undefined && (a.leaderEpoch ?? 0) > (before.leaderEpoch ?? 0) ? a : undefined;
        },
        { timeoutMs: 120_000, what: "another leader elected", intervalMs: 100 },
      );
      const tElected = Date.now();
      // Still the same process: not restarted by a failed liveness probe.
      expect(c.pid(leader)).toBe(leaderPid);
      await cut.exempt([agentPid]);
      expect(elected.leader).not.toBe(leader);
      expect(others).toContain(elected.leader);
      await waitFor(async () => viaOthers.firstAckAfter(P, tElected) !== undefined, {
        timeoutMs: 60_000,
        what: "acks=all answered by the new leader",
        intervalMs: 100,
      });
      const tResumed = viaOthers.firstAckAfter(P, tElected) as number;
      // Long enough that every request sent to the isolated leader after the cut has ended.
      await sleep(Math.max(0, tCut + (ACKS_ALL_WAIT_SECONDS + 8) * 1000 - Date.now()));
      expect(c.pid(leader)).toBe(leaderPid);
      await cut.heal();
      const tHeal = Date.now();

      const isoAfterCut = [...viaLeader.acked.values(), ...viaLeaderCut.acked.values()].filter(
        (a) => a.sentAtMs > tCut && a.atMs < tHeal,
      );
      const isoFailures = [...viaLeader.failures, ...viaLeaderCut.failures].filter(
        (f) => f.sentAtMs > tCut && f.atMs < tHeal,
      );
      const failureKinds = new Map<string, number>();
      for (const f of isoFailures) failureKinds.set(f.kind, (failureKinds.get(f.kind) ?? 0) + 1);
      log(
        `cut → elected (epoch ${elected.leaderEpoch}, ${elected.leader}) ${((tElected - tCut) / 1000).toFixed(1)} s; cut → first 200 through the others ${((tResumed - tCut) / 1000).toFixed(1)} s; produce stall via the others ${(viaOthers.stall(P, tCut, tResumed) / 1000).toFixed(1)} s; while cut off the isolated leader answered ${isoAfterCut.length} request(s) sent after the cut with 200, ended ${isoFailures.length}: ${[...failureKinds].map(([k, v]) => `${k}×${v}`).join(", ")}`,
      );
      expect(isoAfterCut).toEqual([]);
      // Not vacuous: requests did reach it while it was cut off, and ended without a 200.
      expect(isoFailures.length).toBeGreaterThan(0);

      // The old leader truncates and rejoins.
      await c.waitFullyInSync(180_000, `${leader} back in the ISR`);
      const tRejoined = Date.now();
      await sleep(3_000);
      await stoppingBefore;
      await viaLeaderCut.stop();
      await viaOthers.stop();
      watching = false;
      await watch;
      const truncations = await c.brokerLogLines(leader, "follower truncated a divergent tail");
      log(
        `heal → ${leader} back in the ISR ${((tRejoined - tHeal) / 1000).toFixed(1)} s; its truncations: ${truncations.map((l) => `${l["from"]}→${l["to"]} (epoch ${l["epoch"]})`).join(", ") || "none"}`,
      );

      const ip = otherIps()[0] as string;
      const reports = [];
      for (const p of [viaLeader, viaLeaderCut, viaOthers]) {
        const r = await checkAcksAllLedger(p, {
          ip,
          topic: TOPIC,
          partitions: PARTITIONS,
          headers: c.s.headers,
        });
        log(`${r.line}; ${p.summary()}`);
        reports.push(r);
      }
      // No offset answered to two records across both clients.
      const byOffset = new Map<string, string[]>();
      for (const p of [viaLeader, viaLeaderCut, viaOthers])
        for (const [id, a] of p.acked)
          byOffset.set(`${a.partition}/${a.offset}`, [
            ...(byOffset.get(`${a.partition}/${a.offset}`) ?? []),
            id,
          ]);
      const conflicts = [...byOffset].filter(([, ids]) => ids.length > 1);

      // The epoch of every acknowledged offset, from the final epoch history.
      const history = await replicaEpochs(await c.dataDir(elected.leader as string), TOPIC, P);
      const epochAt = (offset: number) => [...history].reverse().find((e) => e.start <= offset)?.epoch ?? -1;
      const newStart =
        history.find((e) => e.epoch === elected.leaderEpoch)?.start ?? Number.POSITIVE_INFINITY;
      const perEpoch = new Map<string, number>();
      for (const [name, p] of [
        ["via the isolated leader", viaLeader],
        ["via the isolated leader (sent after the cut)", viaLeaderCut],
        ["via the others", viaOthers],
      ] as const)
        for (const a of p.acked.values()) {
          if (a.partition !== P) continue;
          const k = `epoch ${epochAt(a.offset)} (${leaders.get(epochAt(a.offset)) ?? "?"}) ${name}`;
          perEpoch.set(k, (perEpoch.get(k) ?? 0) + 1);
        }
      log(
        `epochs ${history.map((e) => `${e.epoch}@${e.start}`).join(" ")}; leaders ${[...leaders].map(([e, m]) => `${e}:${m}`).join(" ")}; 200s by epoch: ${[...perEpoch].map(([k, v]) => `${k}: ${v}`).join("; ")}`,
      );
      const isoInNewEpoch = [...viaLeader.acked.values(), ...viaLeaderCut.acked.values()].filter(
        (a) => a.atMs < tHeal && a.offset >= newStart,
      );

      let cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
      await waitFor(
        async () => {
          cmp = await compareReplicas(await c.records(), c.dataDir, TOPIC);
          return cmp.mismatches.length === 0;
        },
        { timeoutMs: 30_000, what: "byte-identical replicas", intervalMs: 500 },
      ).catch(() => undefined);
      log(`replicas: ${cmp.lines.join("; ")}`);

      for (const r of reports) {
        expect(r.lost.slice(0, 10)).toEqual([]);
        expect(r.duplicated.slice(0, 10)).toEqual([]);
        expect(r.misplaced.slice(0, 10)).toEqual([]);
        expect(r.unknown.slice(0, 10)).toEqual([]);
      }
      expect(conflicts.slice(0, 10)).toEqual([]);
      expect(isoInNewEpoch).toEqual([]);
      expect(cmp.mismatches).toEqual([]);
    } finally {
      watching = false;
      await cut?.heal();
      await viaLeader.stop();
      await viaLeaderCut?.stop();
      await viaOthers.stop();
      await watch;
    }
  });
});
