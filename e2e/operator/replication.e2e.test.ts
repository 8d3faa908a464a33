// The operator's side of replication against a real API server (the local
// platform) with the real operator and real broker processes, on one
// 4-broker cluster, in order:
//   1. a NaradTopic with replicationFactor 3 gets the full record per
//      partition (replicas on distinct brokers, leader first, epoch 0, ISR =
//      every replica on the volume its broker reports); a topic created
//      through POST /v1/topics without a factor gets the default 3;
//   2. kill -9 of a leader's broker (kept down as a crash loop) → Down after
//      the grace → a new leader from the ISR recorded with epoch + 1, the old
//      one out of the ISR; the time from the kill to Down and from Down to the
//      new record is measured (from the operator's own log lines);
//   3. a broker restarted on an emptied data dir within the grace (never
//      Down) reports a new volume id: status.members[].volumeId changes, a
//      VolumeChanged Event, and the partitions it led get new leaders;
//   4. a decommission of a member holding replicas, under acks=all produce:
//      a replacement replica is added beside each of them, catches up and is
//      added to the ISR by the leader, leadership moves off the leaving
//      member, its replicas go, and the member is Removed (the StatefulSet
//      shrinks); every acknowledged record is still stored once at its
//      offset. Cancelling a decommission while its replacements catch up is
//      checked by the controller tests (operator/src/controller/replication.test.ts):
//      with brokers that replicate, the whole reassignment here takes about a
//      second.
// Numbers go to console.log ("replication-e2e:").
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NaradTopic, PartitionAssignment } from "../../packages/api/src/v1alpha1/types.ts";
import { stderrLog } from "../platform/log.ts";
import { podProcessPid } from "../platform/node-agent/pids.ts";
import { getJson, type LogLine, waitFor } from "./harness.ts";
import { BROKER_PORT } from "./load.ts";
import { AcksAllProducer, checkAcksAllLedger } from "./replication-ledger.ts";
import { eventsOf, memberOf, type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("replication-e2e");
const NS = "replication";
const NAME = "rep";
const TOPIC = "orders";
const PARTITIONS = 4;
/** Long enough that a broker restarted by the node agent (1 s backoff + start) stays within it. */
const DOWN_GRACE_SECONDS = 20;

let s: SuiteCluster;

async function topic(name = TOPIC): Promise<NaradTopic | undefined> {
  return getJson<NaradTopic>(s.platform.kubectl, ["-n", NS, "naradtopic", name]);
}
async function records(name = TOPIC): Promise<PartitionAssignment[]> {
  return (await topic(name))?.status?.assignments ?? [];
}
async function volumeIds(): Promise<Map<string, string | undefined>> {
  const c = await s.resource();
  return new Map((c.status?.members ?? []).map((m) => [m.id, m.volumeId]));
}
const isrOf = (a: PartitionAssignment | undefined) => (a?.isr ?? []).map((e) => `${e.member}@${e.volumeId}`);

/** SIGKILLs the broker of `pod` now and every process the node agent restarts for it, until stopped. */
class CrashLoop {
  readonly kills: number[] = [];
  #running = true;
  readonly #loop: Promise<void>;
  constructor(pod: string) {
    this.#loop = (async () => {
      while (this.#running) {
        const pid = podProcessPid(join(s.platform.dir, "node"), NS, pod, "narad");
        if (pid !== null) {
          try {
            process.kill(pid, "SIGKILL");
            this.kills.push(Date.now());
          } catch {
            // exited meanwhile
          }
        }
        await sleep(25);
      }
    })();
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/** The first operator log line at or after `sinceMs` matching pred (pino's `time` is epoch ms). */
function lineAfter(sinceMs: number, pred: (l: LogLine) => boolean, what: string, timeoutMs = 120_000) {
  return s.op.waitForLine((l) => (l["time"] as number) >= sinceMs && pred(l), what, timeoutMs);
}

async function operatorMetric(name: string): Promise<string> {
  const text = await (await fetch(`${s.op.metricsUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .join("\n");
}

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "replication",
    log,
    namespace: NS,
    name: NAME,
    // replication on: POST /v1/topics without a factor takes the cluster's default (3).
    spec: { replicas: 4, rollout: { downGraceSeconds: DOWN_GRACE_SECONDS }, broker: { replication: "on" } },
    ready: { settled: 4, timeoutMs: 300_000 },
    topic: { name: TOPIC, partitions: PARTITIONS, replicationFactor: 3 },
  });
}, 900_000);

afterAll(async () => {
  await s?.stop();
});

describe("replication: the operator's side", () => {
  it("a replicationFactor 3 topic gets the full record; the default on 4 brokers is 3", async () => {
    const vols = await volumeIds();
    expect([...vols.values()].every((v) => v !== undefined && /^[0-9a-f-]{36}$/.test(v))).toBe(true);
    expect(new Set(vols.values()).size).toBe(4);
    const t = await topic();
    expect(t?.status).toMatchObject({
      replicationFactor: 3,
      minInsyncReplicas: 2,
      underReplicatedPartitions: 0,
      offlinePartitions: 0,
      phase: "Ready",
    });
    const recs = t?.status?.assignments ?? [];
    expect(recs).toHaveLength(PARTITIONS);
    for (const a of recs) {
      expect(new Set(a.replicas).size).toBe(3);
      expect(a.leader).toBe(a.replicas?.[0]);
      expect(a.owner).toBe(a.leader);
      expect(a.leaderEpoch).toBe(0);
      expect(isrOf(a)).toEqual((a.replicas ?? []).map((id) => `${id}@${vols.get(id)}`));
    }
    expect(new Set(recs.map((a) => a.leader)).size).toBe(4);

    // Through a broker, no factor given: the operator picks 3 (4 brokers) and records it.
    const ip = (await s.pods())[0]?.ip as string;
    const created = await fetch(`http://${ip}:${BROKER_PORT}/v1/topics`, {
      method: "POST",
      headers: { ...s.headers(), "content-type": "application/json" },
      body: JSON.stringify({ name: "defaulted", partitions: 2 }),
    });
    expect(created.status).toBe(201);
    const d = await waitFor(
      async () => {
        const x = await topic("defaulted");
        return (x?.status?.assignments?.length ?? 0) === 2 ? x : undefined;
      },
      { timeoutMs: 60_000, what: "the defaulted topic's records", intervalMs: 250 },
    );
    // The broker resolved the default (4 brokers: 3) and wrote it with the topic.
    expect(d.spec.replicationFactor).toBe(3);
    expect(d.status?.replicationFactor).toBe(3);
    expect(d.status?.assignments?.every((a) => a.replicas?.length === 3 && a.isr?.length === 3)).toBe(true);
  });

  it("kill -9 of a leader's broker: Down after the grace, then a new leader from the ISR at epoch + 1", async () => {
    const before = await records();
    const victim = before[0]?.leader as string;
    const led = before.filter((a) => a.leader === victim).map((a) => a.partition);
    const crash = new CrashLoop(victim);
    const t0 = Date.now();
    try {
      await waitFor(async () => crash.kills.length > 0, { timeoutMs: 10_000, what: "the first kill" });
      const downLine = await lineAfter(
        t0,
        (l) => typeof l.msg === "string" && l.msg.startsWith(`member ${victim}: Active → Down`),
        `${victim} Down`,
      );
      const electedLines = await Promise.all(
        led.map((p) =>
          lineAfter(
            t0,
            (l) => typeof l.msg === "string" && l.msg.startsWith(`partition ${p}: leader ${victim} → `),
            `a new leader for partition ${p}`,
            60_000,
          ),
        ),
      );
      const tDown = downLine["time"] as number;
      const tElected = Math.max(...electedLines.map((l) => l["time"] as number));
      const after = await waitFor(
        async () => {
          const r = await records();
          return led.every((p) => r[p]?.leaderEpoch === 1) ? r : undefined;
        },
        { timeoutMs: 30_000, what: "the new records readable", intervalMs: 200 },
      );
      log(
        `kill → Down ${((tDown - t0) / 1000).toFixed(1)} s (grace ${DOWN_GRACE_SECONDS} s), Down → new leader recorded ${tElected - tDown} ms, kill → new leader ${((tElected - t0) / 1000).toFixed(1)} s; ${led.length} partition(s) re-led`,
      );
      for (const p of led) {
        const old = before[p] as PartitionAssignment;
        const a = after[p] as PartitionAssignment;
        expect(a.leader).not.toBe(victim);
        expect(old.isr?.map((e) => e.member)).toContain(a.leader);
        expect(a.owner).toBe(a.leader);
        expect(a.leaderEpoch).toBe((old.leaderEpoch ?? 0) + 1);
        expect(a.isr?.map((e) => e.member)).not.toContain(victim);
        expect(a.replicas).toEqual(old.replicas);
      }
      // The operator's part is one reconcile after the Down: well under a second here.
      expect(tElected - tDown).toBeLessThan(5_000);
      expect(tDown - t0).toBeGreaterThanOrEqual(DOWN_GRACE_SECONDS * 1000 - 1000);
      const t = await topic();
      expect(t?.status?.underReplicatedPartitions).toBeGreaterThan(0);
      expect(t?.status?.offlinePartitions).toBe(0);
      expect(t?.status?.conditions?.find((x) => x.type === "Degraded")?.reason).toBe("UnderReplicated");
      expect((await eventsOf(s.platform, NS, "LeaderElected")).map((e) => e.message).join("\n")).toContain(
        `leader ${victim} is Down`,
      );
      expect(await operatorMetric("narad_operator_leader_elections_total")).toMatch(
        new RegExp(`topic="${TOPIC}",cause="leader_down"} ${led.length}`),
      );
    } finally {
      await crash.stop();
    }
    // Back on its own volume: Active again, its volume id unchanged, nobody re-elected.
    const vol = (await volumeIds()).get(victim);
    await waitFor(async () => memberOf(await s.cluster(), victim)?.state === "Active", {
      timeoutMs: 120_000,
      what: `${victim} Active again`,
      intervalMs: 500,
    });
    expect((await volumeIds()).get(victim)).toBe(vol);
    expect((await records()).every((a) => a.leader !== victim)).toBe(true);
  });

  it("a broker back on an emptied data dir within the grace: new volume id, its partitions re-led although it is not Down", async () => {
    const c = await s.cluster();
    const everKilled = new Set(
      (await eventsOf(s.platform, NS, "MemberDown")).map((e) => /^(\S+):/.exec(e.message)?.[1]),
    );
    const recs = await records();
    const victim = recs
      .map((a) => a.leader as string)
      .find((id) => !everKilled.has(id) && memberOf(c, id)?.state === "Active") as string;
    expect(victim).toBeDefined();
    const led = recs.filter((a) => a.leader === victim).map((a) => a.partition);
    const oldVolume = (await volumeIds()).get(victim) as string;
    // The volume's directory on the node: the PV bound to data-<pod>.
    const pvc = await s.core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: `data-${victim}` });
    const pv = await s.core.readPersistentVolume({ name: pvc.spec?.volumeName as string });
    const dir = pv.spec?.hostPath?.path as string;
    expect(dir).toBeTruthy();

    const pid = podProcessPid(join(s.platform.dir, "node"), NS, victim, "narad") as number;
    const t0 = Date.now();
    process.kill(pid, "SIGSTOP"); // nothing more is written
    await rm(join(dir, "data"), { recursive: true, force: true });
    process.kill(pid, "SIGKILL"); // the node agent restarts it on the empty volume
    const changed = await lineAfter(
      t0,
      (l) => typeof l.msg === "string" && l.msg.startsWith(`${victim} runs on another volume`),
      `${victim}'s new volume id`,
    );
    const elected = await Promise.all(
      led.map((p) =>
        lineAfter(
          t0,
          (l) => typeof l.msg === "string" && l.msg.startsWith(`partition ${p}: leader ${victim} → `),
          `a new leader for partition ${p}`,
          60_000,
        ),
      ),
    );
    const tChanged = changed["time"] as number;
    const tElected = Math.max(...elected.map((l) => l["time"] as number));
    log(
      `emptied volume: kill → new volume id recorded ${((tChanged - t0) / 1000).toFixed(1)} s, → new leader(s) ${tElected - tChanged} ms later; ${led.length} partition(s) re-led`,
    );
    const newVolume = (await volumeIds()).get(victim) as string;
    expect(newVolume).not.toBe(oldVolume);
    expect(newVolume).toMatch(/^[0-9a-f-]{36}$/);
    // Never Down: its broker was back within the grace.
    expect(
      (await eventsOf(s.platform, NS, "MemberDown")).filter((e) => e.message.startsWith(`${victim}:`)),
    ).toEqual([]);
    expect(memberOf(await s.cluster(), victim)?.state).toBe("Active");
    expect((await eventsOf(s.platform, NS, "VolumeChanged")).map((e) => e.message).join("\n")).toContain(
      `${victim} runs on another volume: ${oldVolume} → ${newVolume}`,
    );
    const after = await waitFor(
      async () => {
        const r = await records();
        return led.every((p) => r[p]?.leader !== victim) ? r : undefined;
      },
      { timeoutMs: 30_000, what: "the new records readable", intervalMs: 200 },
    );
    for (const p of led) {
      const a = after[p] as PartitionAssignment;
      expect(a.leaderEpoch).toBe(((recs[p] as PartitionAssignment).leaderEpoch ?? 0) + 1);
      // Its entry named the old volume: it vouches for nothing and is gone.
      expect(isrOf(a)).not.toContain(`${victim}@${oldVolume}`);
    }
    expect(await operatorMetric("narad_operator_leader_elections_total")).toMatch(
      new RegExp(`topic="${TOPIC}",cause="leader_volume"} ${led.length}`),
    );
  });

  it("decommissioning a member with replicas reassigns them (add, catch up, switch, drop) and removes it, losing nothing", async () => {
    const leaving = `${NAME}-3`;
    const before = await records();
    const holding = before.filter((a) => a.replicas?.includes(leaving)).map((a) => a.partition);
    expect(holding.length).toBeGreaterThan(0);
    const ready = async () =>
      (await s.pods())
        .filter((p) => p.ready && p.ip !== undefined && p.name !== leaving)
        .map((p) => p.ip as string);
    let ips = await ready();
    const producer = new AcksAllProducer({
      tag: "dc",
      topic: TOPIC,
      ips: () => ips,
      headers: s.headers,
      workers: 3,
    });
    try {
      await waitFor(async () => producer.acked.size >= 50, {
        timeoutMs: 60_000,
        what: "records before",
        intervalMs: 200,
      });
      const t0 = Date.now();
      await s.patchSpec({ replicas: 3 });
      await waitFor(
        async () =>
          memberOf(await s.cluster(), leaving)?.state === "Removed" || (await s.stsReplicas()) === 3,
        {
          timeoutMs: 180_000,
          what: `${leaving} decommissioned`,
          intervalMs: 250,
        },
      );
      log(
        `decommission of ${leaving} holding ${holding.length} replica(s): Removed after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      await s.waitSettled(3, 180_000, "the cluster settled at 3");
      ips = await ready();
      await sleep(2_000);
    } finally {
      await producer.stop();
    }
    const vols = await volumeIds();
    const after = await records();
    for (const p of holding) {
      const a = after[p] as PartitionAssignment;
      expect(a.replicas).not.toContain(leaving);
      expect(a.replicas).toHaveLength(3);
      expect(a.leader).not.toBe(leaving);
      expect(isrOf(a).sort()).toEqual((a.replicas ?? []).map((id) => `${id}@${vols.get(id)}`).sort());
    }
    expect((await eventsOf(s.platform, NS, "ReplicaAdded")).length).toBeGreaterThanOrEqual(holding.length);
    expect((await eventsOf(s.platform, NS, "ReplicaRemoved")).length).toBeGreaterThanOrEqual(holding.length);
    const report = await checkAcksAllLedger(producer, {
      ip: ips[0] as string,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: s.headers,
    });
    log(`${report.line}; ${producer.summary()}`);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.misplaced.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
  });
});
