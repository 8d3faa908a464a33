// Leadership of replicated partitions around planned restarts and failures,
// against a real API server (the local platform) with the real operator and
// real broker processes, on one 3-broker cluster (RF 3, min in sync 2):
//   1. a roll (narad.dev/restartedAt): before each pod is drained, every
//      replicated partition it leads moves to another in-sync replica
//      (status.roll.handoffDoneAt, Event LeadershipHandedOff), so no
//      partition is led by a pod that is not Ready at any sampled moment; an
//      acks=all prober per partition (through the brokers not in flight)
//      measures each partition's longest gap between two commits during the
//      roll, and the handoff time is read from the operator's log;
//   2. preferred-leader balance: after the roll every partition is led by
//      its first replica again (measured from the roll's end); then kill -9
//      of a leader's broker (kept down), an election, the broker back: the
//      partitions it prefers are led by it again within a bound (measured
//      from its return to Active);
//   3. a decommissioned leader that crashes: scale to 4, a topic led in
//      part by the 4th broker, scale back to 3 and kill -9 that broker (kept
//      down): it stays Decommissioning, gets failedSince after the grace,
//      its partitions elect new leaders; once it is back the decommission
//      finishes (Removed, the StatefulSet at 3).
// Every acks=all record acknowledged (200) is read back exactly once at the
// end; records whose answer was ambiguous appear at most once.
// Numbers go to console.log ("leadership-e2e:").
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NaradTopic, PartitionAssignment } from "../../packages/api/src/v1alpha1/types.ts";
import { stderrLog } from "../platform/log.ts";
import { podProcessPid } from "../platform/node-agent/pids.ts";
import { getJson, waitFor } from "./harness.ts";
import { BROKER_PORT, type PodInfo, readTopic } from "./load.ts";
import { type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("leadership-e2e");
const NS = "leadership";
const NAME = "lead";
const TOPIC = "orders";
const PARTITIONS = 3;
const DOWN_GRACE_SECONDS = 15;

let s: SuiteCluster;

async function records(name = TOPIC): Promise<PartitionAssignment[]> {
  const t = await getJson<NaradTopic>(s.platform.kubectl, ["-n", NS, "naradtopic", name]);
  return t?.status?.assignments ?? [];
}

/**
 * Pods, the roll's pod in flight and the leaders, every 250 ms. A violation:
 * a partition whose recorded leader's pod is not Ready (terminating,
 * missing) while that pod is the roll's pod in flight — the partition is
 * then neither written nor read.
 */
class LeaderSampler {
  pods: PodInfo[] = [];
  inFlight: string | undefined;
  samples = 0;
  readonly violations: string[] = [];
  /** Each pod's time in flight: from the roll naming it until the roll names another or none. */
  readonly windows: Array<{ pod: string; from: number; to: number }> = [];
  #running = true;
  readonly #loop: Promise<void>;
  constructor() {
    this.#loop = (async () => {
      while (this.#running) {
        try {
          const [pods, c, recs] = await Promise.all([s.pods(), s.resource(), records()]);
          this.pods = pods;
          const inFlight = c.status?.roll?.podInFlight;
          const now = Date.now();
          const open = this.windows.at(-1);
          if (open !== undefined && open.to === 0 && open.pod !== inFlight) open.to = now;
          if (inFlight !== undefined && (open === undefined || open.to !== 0 || open.pod !== inFlight))
            this.windows.push({ pod: inFlight, from: now, to: 0 });
          this.inFlight = inFlight;
          this.samples++;
          for (const a of recs) {
            const pod = pods.find((p) => p.name === a.leader);
            if (a.leader !== this.inFlight || a.leader === undefined || a.leader === null) continue;
            if (pod === undefined || !pod.ready || pod.terminating)
              this.violations.push(`${new Date().toISOString()} partition ${a.partition} led by ${a.leader}`);
          }
        } catch (err) {
          log(`sampler: ${String(err)}`);
        }
        await sleep(250);
      }
    })();
  }
  /** Ready brokers other than the roll's pod in flight (where a client would send). */
  targets(): string[] {
    return this.pods
      .filter((p) => p.ready && p.name !== this.inFlight)
      .map((p) => p.ip)
      .filter((ip): ip is string => ip !== undefined);
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/** acks=all produce pinned to one partition, every 100 ms, each attempt a new id (never retried). */
class PartitionProber {
  readonly oks: number[] = [];
  readonly acked = new Set<string>();
  readonly ambiguous = new Set<string>();
  readonly errors = new Map<string, number>();
  readonly partition: number;
  #n = 0;
  #running = true;
  readonly #loop: Promise<void>;
  constructor(partition: number, targets: () => string[]) {
    this.partition = partition;
    this.#loop = (async () => {
      while (this.#running) {
        const ips = targets();
        const ip = ips[this.#n % Math.max(ips.length, 1)];
        if (ip === undefined) {
          await sleep(100);
          continue;
        }
        const id = `p${partition}-${this.#n++}`;
        try {
          const r = await fetch(
            `http://${ip}:${BROKER_PORT}/v1/topics/${TOPIC}/produce?partition=${partition}&key=${id}&acks=all`,
            {
              method: "POST",
              body: JSON.stringify({ id }),
              headers: s.headers(),
              signal: AbortSignal.timeout(5_000),
            },
          );
          await r.body?.cancel();
          if (r.status === 200) {
            this.acked.add(id);
            this.oks.push(Date.now());
          } else {
            // 503 not_enough_replicas stores nothing; commit_timeout (503)
            // and 504 may still commit: all counted as "at most once".
            this.ambiguous.add(id);
            this.#err(`HTTP ${r.status}`);
          }
        } catch (err) {
          const code = (err as { cause?: { code?: string } }).cause?.code;
          this.#err(code ?? (err as Error).name);
          if (code !== "ECONNREFUSED") this.ambiguous.add(id);
        }
        await sleep(100);
      }
    })();
  }
  #err(kind: string): void {
    this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
  }
  /** The longest stretch within [from, to] without a commit (ms). */
  longestGap(from: number, to: number): number {
    let last = from;
    let worst = 0;
    for (const t of this.oks) {
      if (t < from) continue;
      worst = Math.max(worst, Math.min(t, to) - last);
      last = t;
      if (t >= to) return worst;
    }
    return Math.max(worst, to - last);
  }
  summary(): string {
    const kinds = [...this.errors].map(([k, v]) => `${k}×${v}`).join(", ") || "none";
    return `partition ${this.partition}: ${this.acked.size} committed, ${this.ambiguous.size} ambiguous (${kinds})`;
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

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

/** Every partition led by its first replica (the preferred leader). */
async function waitBalanced(timeoutMs: number, what: string): Promise<PartitionAssignment[]> {
  return waitFor(
    async () => {
      const r = await records();
      return r.length === PARTITIONS && r.every((a) => a.leader === a.replicas?.[0]) ? r : undefined;
    },
    { timeoutMs, what, intervalMs: 200 },
  );
}

let sampler: LeaderSampler;
let probers: PartitionProber[] = [];

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "leadership",
    log,
    namespace: NS,
    name: NAME,
    spec: { replicas: 3, rollout: { downGraceSeconds: DOWN_GRACE_SECONDS } },
    ready: { settled: 3, timeoutMs: 300_000 },
    topic: { name: TOPIC, partitions: PARTITIONS, replicationFactor: 3 },
  });
  await waitFor(
    async () => {
      const r = await records();
      return r.length === PARTITIONS && r.every((a) => a.isr?.length === 3) ? r : undefined;
    },
    { timeoutMs: 60_000, what: "every partition placed with 3 in sync", intervalMs: 250 },
  );
  sampler = new LeaderSampler();
  probers = [...Array(PARTITIONS).keys()].map((p) => new PartitionProber(p, () => sampler.targets()));
}, 900_000);

afterAll(async () => {
  await Promise.all(probers.map((p) => p.stop()));
  await sampler?.stop();
  await s?.stop();
});

describe("leadership of replicated partitions", () => {
  it("a roll hands leadership off each pod before draining it: no partition is led by a pod that is down", async () => {
    await sleep(3_000); // commits before the roll
    const before = await records();
    const from = (await s.resource()).status?.updateRevision;
    const t0 = Date.now();
    await s.platform.kubectl([
      "-n",
      NS,
      "annotate",
      "--overwrite",
      "naradcluster",
      NAME,
      `narad.dev/restartedAt=${new Date().toISOString()}`,
    ]);
    const rolled = await waitFor(
      async () => {
        const c = await s.resource();
        const pods = await s.pods();
        const rev = c.status?.updateRevision;
        const done =
          rev !== undefined &&
          rev !== from &&
          c.status?.roll === undefined &&
          pods.length === 3 &&
          pods.every((p) => p.ready && p.revision === rev) &&
          (c.status?.members ?? []).every((m) => m.state === "Active");
        return done ? c : undefined;
      },
      { timeoutMs: 300_000, what: "the roll to finish", intervalMs: 500 },
    );
    const t1 = Date.now();
    expect(rolled.status?.roll).toBeUndefined();
    await sleep(3_000); // commits after the roll

    // Handoff time per pod: the roll naming the pod → the handoff over (operator log).
    const lines = s.op.lines();
    const handoffMs = new Map<string, number>();
    for (const pod of [`${NAME}-2`, `${NAME}-1`, `${NAME}-0`]) {
      const at = (pred: (msg: string) => boolean) =>
        lines.find((l) => (l["time"] as number) >= t0 && typeof l.msg === "string" && pred(l.msg))?.[
          "time"
        ] as number | undefined;
      const start = at((m) => m.startsWith(`restarting ${pod} (`));
      const done = at((m) => m.startsWith(`${pod} leads no replicated partition`));
      if (start !== undefined && done !== undefined) handoffMs.set(pod, done - start);
    }
    // Per partition: the longest commit gap while its own leader (at the
    // start) was in flight, and while a follower was.
    const asLeader: string[] = [];
    const asFollower: string[] = [];
    for (const p of probers) {
      const leader = before.find((a) => a.partition === p.partition)?.leader;
      const gap = (w: { from: number; to: number }) => p.longestGap(w.from, w.to === 0 ? t1 : w.to);
      const lw = sampler.windows.filter((w) => w.pod === leader).map(gap);
      const fw = sampler.windows.filter((w) => w.pod !== leader).map(gap);
      asLeader.push(`p${p.partition} ${Math.max(0, ...lw)} ms`);
      asFollower.push(`p${p.partition} ${Math.max(0, ...fw)} ms`);
    }
    const gaps = probers.map((p) => p.longestGap(t0, t1));
    console.log(
      `leadership-e2e: roll of 3 pods took ${((t1 - t0) / 1000).toFixed(1)} s; handoff (roll names the pod → it leads nothing): ${[...handoffMs].map(([pod, ms]) => `${pod} ${ms} ms`).join(", ") || "none logged"}; longest acks=all commit gap per partition: whole roll ${gaps.map((g, p) => `p${p} ${g} ms`).join(", ")}; while its leader restarted ${asLeader.join(", ")}; while a follower restarted ${asFollower.join(", ")}; led-by-a-down-pod samples: ${sampler.violations.length} of ${sampler.samples}; windows ${sampler.windows.map((w) => `${w.pod} ${(((w.to || t1) - w.from) / 1000).toFixed(1)} s`).join(", ")}; ${probers.map((p) => p.summary()).join("; ")}`,
    );
    expect(handoffMs.size).toBe(3);
    for (const pod of [`${NAME}-2`, `${NAME}-1`, `${NAME}-0`])
      expect(handoffMs.get(pod), pod).toBeLessThan(30_000);
    expect(sampler.violations, sampler.violations.slice(0, 5).join("; ")).toEqual([]);
    expect(await s.eventText("LeadershipKept")).not.toContain("still leads");
  });

  it("leadership returns to each partition's preferred leader after the roll and after a leader's crash", async () => {
    // After the roll: the last pod restarted led nothing; balance moves it back.
    const tBalance0 = Date.now();
    await waitBalanced(60_000, "every partition led by its first replica after the roll");
    const afterRollMs = Date.now() - tBalance0;

    const before = await records();
    const victim = before[0]?.leader as string;
    const preferredBy = before.filter((a) => a.replicas?.[0] === victim).map((a) => a.partition);
    const crash = new CrashLoop(victim);
    const tKill = Date.now();
    try {
      await waitFor(
        async () => {
          const r = await records();
          return preferredBy.every((p) => r[p]?.leader !== victim && r[p]?.leader !== null) ? r : undefined;
        },
        { timeoutMs: 90_000, what: `new leaders elected away from ${victim}`, intervalMs: 200 },
      );
    } finally {
      await crash.stop();
    }
    const tElected = Date.now();
    const active = await waitFor(
      async () => {
        const c = await s.resource();
        return c.status?.members?.find((m) => m.id === victim)?.state === "Active" ? Date.now() : undefined;
      },
      { timeoutMs: 120_000, what: `${victim} Active again`, intervalMs: 200 },
    );
    const inSync = await waitFor(
      async () => {
        const r = await records();
        return preferredBy.every((p) => r[p]?.isr?.some((e) => e.member === victim)) ? Date.now() : undefined;
      },
      { timeoutMs: 120_000, what: `${victim} back in the ISR`, intervalMs: 200 },
    );
    const balanced = await waitFor(
      async () => {
        const r = await records();
        return preferredBy.every((p) => r[p]?.leader === victim) ? r : undefined;
      },
      { timeoutMs: 90_000, what: `leadership back on ${victim}`, intervalMs: 200 },
    );
    const tBack = Date.now();
    console.log(
      `leadership-e2e: balanced ${afterRollMs} ms after the roll ended; kill -9 of ${victim} (leader of ${preferredBy.length}) → new leaders ${((tElected - tKill) / 1000).toFixed(1)} s (grace ${DOWN_GRACE_SECONDS} s); back Active → in the ISR ${inSync - active} ms → preferred leader again ${tBack - inSync} ms (Active → leader ${((tBack - active) / 1000).toFixed(1)} s)`,
    );
    for (const p of preferredBy) {
      const a = balanced[p] as PartitionAssignment;
      const old = before[p] as PartitionAssignment;
      expect(a.leader).toBe(victim);
      expect(a.replicas).toEqual(old.replicas);
      // Two changes: the election away, the move back.
      expect(a.leaderEpoch).toBe((old.leaderEpoch ?? 0) + 2);
    }
    expect(tBack - active).toBeLessThan(60_000);
  });

  it("a decommissioned leader that crashes is elected around after the grace; the decommission finishes once it is back", async () => {
    const victim = `${NAME}-3`;
    await s.patchSpec({ replicas: 4 });
    await s.waitSettled(4, 180_000, "4 brokers");
    await s.platform.applyYaml(
      JSON.stringify({
        apiVersion: "narad.dev/v1alpha1",
        kind: "NaradTopic",
        metadata: { name: "late", namespace: NS },
        spec: { cluster: NAME, partitions: 4, replicationFactor: 3 },
      }),
    );
    const placed = await waitFor(
      async () => {
        const r = await records("late");
        return r.length === 4 && r.every((a) => a.isr?.length === 3) ? r : undefined;
      },
      { timeoutMs: 60_000, what: "the late topic placed", intervalMs: 250 },
    );
    const led = placed.filter((a) => a.leader === victim).map((a) => a.partition);
    expect(led.length).toBeGreaterThan(0);
    await s.patchSpec({ replicas: 3 });
    await waitFor(
      async () =>
        (await s.resource()).status?.members?.find((m) => m.id === victim)?.state === "Decommissioning"
          ? true
          : undefined,
      { timeoutMs: 30_000, what: `${victim} Decommissioning`, intervalMs: 100 },
    );
    const crash = new CrashLoop(victim);
    const tKill = Date.now();
    let failedAt = 0;
    let electedAt = 0;
    try {
      await waitFor(
        async () => {
          const m = (await s.resource()).status?.members?.find((x) => x.id === victim);
          return m?.failedSince !== undefined ? m : undefined;
        },
        { timeoutMs: 90_000, what: `failedSince on ${victim}`, intervalMs: 200 },
      );
      failedAt = Date.now();
      const m = (await s.resource()).status?.members?.find((x) => x.id === victim);
      expect(m?.state).toBe("Decommissioning");
      const after = await waitFor(
        async () => {
          const r = await records("late");
          return led.every((p) => r[p]?.leader !== victim && r[p]?.leader !== null) ? r : undefined;
        },
        { timeoutMs: 30_000, what: `new leaders away from ${victim}`, intervalMs: 200 },
      );
      electedAt = Date.now();
      for (const p of led) {
        expect(placed[p]?.isr?.map((e) => e.member)).toContain(after[p]?.leader);
        expect(after[p]?.leaderEpoch).toBe((placed[p]?.leaderEpoch ?? 0) + 1);
      }
      expect(await s.eventText("MemberFailed")).toContain(`${victim}: Decommissioning`);
    } finally {
      await crash.stop();
    }
    const tBack = Date.now();
    await s.waitSettled(3, 240_000, "the decommission of the crashed member finished");
    const c = await s.resource();
    expect(c.status?.members?.find((m) => m.id === victim)).toBeUndefined();
    const late = await records("late");
    expect(late.every((a) => !a.replicas?.includes(victim) && a.isr?.length === 3)).toBe(true);
    console.log(
      `leadership-e2e: decommissioning leader ${victim} (led ${led.length} of 4) killed: failedSince after ${((failedAt - tKill) / 1000).toFixed(1)} s (grace ${DOWN_GRACE_SECONDS} s), new leaders ${electedAt - failedAt} ms later; back → decommission done ${((Date.now() - tBack) / 1000).toFixed(1)} s`,
    );
  });

  it("every acks=all record acknowledged is read back once; ambiguous ones at most once", async () => {
    await Promise.all(probers.map((p) => p.stop()));
    const ip = sampler.targets()[0] as string;
    const seen = await waitFor(async () => readTopic(ip, TOPIC, PARTITIONS, s.headers), {
      timeoutMs: 30_000,
      what: "the topic read back",
    });
    let acked = 0;
    for (const p of probers) {
      for (const id of p.acked) {
        acked++;
        expect(seen.get(id), `acknowledged ${id}`).toBe(1);
      }
      for (const id of p.ambiguous) expect(seen.get(id) ?? 0, `ambiguous ${id}`).toBeLessThanOrEqual(1);
    }
    console.log(`leadership-e2e: ${acked} acknowledged acks=all records read back once each`);
    expect(acked).toBeGreaterThan(100);
  });
});
