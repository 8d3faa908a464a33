// One seed of the replication simulation: a fault phase (kill -9, volume
// loss, a leader cut off from everyone, stale broker and operator views,
// lost requests and answers), then a quiet phase in which every broker is
// back, the network whole, and the cluster must converge. Invariants are
// checked after every step (invariants.ts).

import { prng } from "../../broker/src/testing/prng.ts";
import { ReplicationInvariants, type Violation } from "./invariants.ts";
import { type Broker, ReplicationWorld, type WorldSettings } from "./world.ts";

export const replicationFaults = [
  "kill",
  "volume-loss",
  "isolate-leader",
  "stale-view",
  "stale-operator",
] as const;
export type ReplicationFault = (typeof replicationFaults)[number];

export interface ReplicationSeedConfig {
  seed: number;
  steps: number;
  quietSteps: number;
  faultRate: number;
  settings: WorldSettings;
  traceTail: number;
  /** Check only loss, truncation, divergence and convergence (to show what a broken rule costs a user). */
  absoluteOnly?: boolean;
}

export function defaultReplicationConfig(
  seed: number,
  steps = 1_500,
  over: Partial<WorldSettings> = {},
): ReplicationSeedConfig {
  return {
    seed,
    steps,
    quietSteps: 3_000,
    faultRate: 0.02,
    traceTail: 40,
    settings: {
      brokers: 3,
      partitions: 3,
      replicationFactor: 3,
      minInsync: 2,
      replicaLagMs: 1_000,
      downGraceMs: 500,
      batchTimeoutMs: 1_500,
      volumeIdentity: true,
      minInsyncFloor: true,
      epochStartRule: true,
      ...over,
    },
  };
}

export interface ReplicationSeedResult {
  seed: number;
  steps: number;
  violations: Violation[];
  trace: string[];
  faults: Map<ReplicationFault, number>;
  produced: number;
  acked: number;
  refusedNotEnough: number;
  elections: number;
  isrChanges: number;
  truncations: number;
}

export function runReplicationSeed(cfg: ReplicationSeedConfig): ReplicationSeedResult {
  const rnd = prng(cfg.seed * 2_654_435_761);
  const trace: string[] = [];
  let inv: ReplicationInvariants | undefined;
  let step = 0;
  const w = new ReplicationWorld(cfg.settings, rnd, {
    onAck: (e) => inv?.onAck(e),
    onTruncationRefused: (b, p, reason) => inv?.onTruncationRefused(b, p, reason),
    trace: (line) => {
      trace.push(`[${step} ${w.nowMs}ms] ${line}`);
      if (trace.length > cfg.traceTail * 4) trace.splice(0, trace.length - cfg.traceTail);
    },
  });
  inv = new ReplicationInvariants(w, cfg.absoluteOnly ?? false);
  const faults = new Map<ReplicationFault, number>();
  const fired = (f: ReplicationFault, line: string) => {
    faults.set(f, (faults.get(f) ?? 0) + 1);
    w.ev.trace(`FAULT ${f}: ${line}`);
  };
  // When each dead broker restarts, when each isolation ends.
  const restartAt = new Map<string, number>();
  let isolationEndsMs = 0;
  /** Brokers whose volume was lost and who are not yet back in every ISR they belong to. */
  const recovering = new Set<string>();

  const backInIsr = (b: Broker): boolean =>
    [...b.replicas.keys()].every((p) =>
      w.store.get(p)?.rec.isr.some((m) => m.member === b.id && m.volumeId === b.volumeId),
    );

  const normalWork = (produce: boolean) => {
    const b = rnd.pick(w.brokers);
    const p = rnd.int(cfg.settings.partitions);
    const x = rnd.next();
    // Followers long-poll in production: every step, one follower fetches.
    w.fetch(rnd.pick(w.brokers), rnd.int(cfg.settings.partitions));
    if (x < 0.3) {
      if (produce) w.produce(b, p);
    } else if (x < 0.55) w.fetch(b, p);
    else if (x < 0.7) w.fsync(b);
    else if (x < 0.9) w.leaderTick(b, p);
    else w.refreshView(b);
    if (rnd.bool(0.08)) w.operatorPass();
  };

  const fault = () => {
    const f = rnd.pick(replicationFaults);
    const live = w.brokers.filter((b) => b.alive);
    if (f === "kill" && live.length === w.brokers.length) {
      const b = rnd.pick(live);
      w.kill(b);
      restartAt.set(b.id, w.nowMs + rnd.range(50, 2_000));
      fired(f, `${b.id} (restart in ${(restartAt.get(b.id) as number) - w.nowMs}ms)`);
    } else if (f === "volume-loss" && live.length === w.brokers.length && recovering.size === 0) {
      // One destroyed volume at a time: the guarantee is "any one broker
      // with its volume"; a second loss before the first is repaired may
      // take the last copy, as it would in production.
      const b = rnd.pick(live);
      w.loseVolume(b);
      recovering.add(b.id);
      restartAt.set(b.id, w.nowMs + rnd.range(50, 2_000));
      fired(f, `${b.id} comes back on ${b.volumeId}`);
    } else if (f === "isolate-leader" && w.isolated.size === 0) {
      const p = rnd.int(cfg.settings.partitions);
      const leader = w.store.get(p)?.rec.leader;
      if (leader === null || leader === undefined) return;
      w.isolated.add(leader);
      isolationEndsMs = w.nowMs + rnd.range(200, 3_000);
      fired(f, `${leader} (leader of p${p}) for ${isolationEndsMs - w.nowMs}ms`);
    } else if (f === "stale-view") {
      const b = rnd.pick(w.brokers);
      b.viewStaleUntilMs = w.nowMs + rnd.range(100, 2_000);
      fired(f, `${b.id} for ${b.viewStaleUntilMs - w.nowMs}ms`);
    } else if (f === "stale-operator") {
      w.opStaleUntilMs = w.nowMs + rnd.range(100, 2_000);
      fired(f, `for ${w.opStaleUntilMs - w.nowMs}ms`);
    }
  };

  const heal = (quiet: boolean) => {
    for (const [id, at] of restartAt)
      if (quiet || w.nowMs >= at) {
        w.restart(w.broker(id));
        restartAt.delete(id);
      }
    if (w.isolated.size > 0 && (quiet || w.nowMs >= isolationEndsMs)) w.isolated.clear();
    if (quiet) {
      w.opStaleUntilMs = 0;
      for (const b of w.brokers) b.viewStaleUntilMs = 0;
    }
    for (const id of recovering) if (w.broker(id).alive && backInIsr(w.broker(id))) recovering.delete(id);
  };

  const total = cfg.steps + cfg.quietSteps;
  try {
    for (step = 0; step < total; step++) {
      const quiet = step >= cfg.steps;
      w.nowMs += rnd.range(0, 30);
      heal(quiet);
      if (!quiet && rnd.bool(cfg.faultRate)) fault();
      // The second half of the quiet phase takes no new records, so the logs can end equal.
      else normalWork(step < cfg.steps + cfg.quietSteps / 2);
      inv.check();
      if (inv.violations.length > 0) break;
    }
  } catch (err) {
    inv.violations.push({ kind: "model-error", message: err instanceof Error ? err.message : String(err) });
  }
  if (inv.violations.length === 0) {
    // A last sweep in which every follower fetches every partition, so the
    // final leader tick sees each one caught up (random scheduling can
    // leave one pair unfetched for a replica_lag_ms, which would shrink it).
    for (let round = 0; round < 3; round++) {
      for (const b of w.brokers) for (let p = 0; p < cfg.settings.partitions; p++) w.fetch(b, p);
      for (const b of w.brokers) w.fsync(b);
    }
    for (let p = 0; p < cfg.settings.partitions; p++) {
      const l = w.store.get(p)?.rec.leader;
      if (l) w.leaderTick(w.broker(l), p);
    }
    inv.check();
    inv.checkConverged();
  }
  return {
    seed: cfg.seed,
    steps: step,
    violations: inv.violations,
    trace: trace.slice(-cfg.traceTail),
    faults,
    produced: w.produced,
    acked: w.acked,
    refusedNotEnough: w.refusedNotEnough,
    elections: w.elections,
    isrChanges: w.isrChanges,
    truncations: w.truncations,
  };
}

export function replicationReplayCommand(cfg: ReplicationSeedConfig): string {
  const mode = `${cfg.settings.volumeIdentity ? "" : " --names-only"}${cfg.settings.minInsyncFloor ? "" : " --no-floor"}${cfg.settings.epochStartRule ? "" : " --hwm-only-expand"}${cfg.absoluteOnly ? " --absolute-only" : ""}`;
  return `npm run sim:replication -- --seed ${cfg.seed} --steps ${cfg.steps}${mode}`;
}
