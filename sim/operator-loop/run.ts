// One seed of the operator-in-the-loop simulation: a fault phase (broker
// crashes and freezes, node faults, force-deleted pods, stuck drains, stale
// and frozen caches, API brownouts, lost leases, and the user changing the
// image and the replica count), then a quiet phase in which the cluster
// must converge: every pod of the wanted revision Ready, every member
// Active, no roll or scale in flight, nobody draining.
//
//   node --experimental-strip-types sim/operator-loop/run.ts SEED [STEPS]

import { prng } from "../../broker/src/testing/prng.ts";
import { getCondition } from "../../operator/src/plan/conditions.ts";
import { Invariants, type Violation } from "./invariants.ts";
import { CLUSTER, OperatorLoopWorld, type WorldSettings } from "./world.ts";

export type OperatorFault =
  | "crash"
  | "freeze"
  | "node-not-ready"
  | "force-delete"
  | "stuck-drain"
  | "stale-cache"
  | "api-brownout"
  | "lease-lost-mid-pass"
  | "lease-lost"
  | "set-image"
  | "set-replicas";

/** Relative weights of the faults; one is drawn with probability faultRate per step. */
const WEIGHTS: ReadonlyArray<[OperatorFault, number]> = [
  ["crash", 3],
  ["freeze", 2],
  ["node-not-ready", 3],
  ["force-delete", 2],
  ["stuck-drain", 2],
  ["stale-cache", 3],
  ["api-brownout", 1],
  ["lease-lost-mid-pass", 2],
  ["lease-lost", 1],
  ["set-image", 3],
  ["set-replicas", 3],
];

export interface OperatorSeedConfig {
  seed: number;
  /** Fault-phase steps (one simulated second each). */
  steps: number;
  /** Most quiet steps allowed to converge. */
  quietSteps: number;
  /** Chance per step that a fault (or user action) is drawn. */
  faultRate: number;
  settings: WorldSettings;
}

export function defaultOperatorConfig(seed: number, steps = 600): OperatorSeedConfig {
  const r = prng(seed * 7919);
  return {
    seed,
    steps,
    quietSteps: 900,
    faultRate: 0.05,
    settings: {
      replicas: r.range(3, 4),
      partitions: r.range(4, 9),
      whenScaled: r.bool() ? "Delete" : "Retain",
      downGraceSeconds: 30,
      gateTimeoutSeconds: 20,
      drainTimeoutSeconds: 60,
    },
  };
}

export interface OperatorSeedResult {
  violations: Violation[];
  trace: string[];
  faults: Map<OperatorFault, number>;
  /** Steps of the quiet phase the cluster needed to converge. */
  convergedAfter: number | undefined;
  /** Operations seen to complete: pods restarted by a roll, members removed. */
  evictions: number;
  removals: number;
}

export async function runOperatorSeed(cfg: OperatorSeedConfig): Promise<OperatorSeedResult> {
  const rng = prng(cfg.seed);
  const world = new OperatorLoopWorld(rng, cfg.settings);
  const inv = new Invariants(world);
  world.observer = inv;
  const faults = new Map<OperatorFault, number>();
  let image = 1;

  const step = async (inject: boolean) => {
    await world.clock.advance(1000);
    if (inject && rng.bool(cfg.faultRate)) {
      const f = draw(rng.next());
      if (injectFault(world, f, () => `narad:${++image}`)) faults.set(f, (faults.get(f) ?? 0) + 1);
    }
    await world.physics();
    inv.sample();
    await world.operatorPass();
    inv.check();
  };

  // Start: the cluster comes up before anything goes wrong.
  for (let i = 0; i < 60; i++) await step(false);
  for (let i = 0; i < cfg.steps; i++) await step(true);
  let convergedAfter: number | undefined;
  for (let i = 0; i < cfg.quietSteps; i++) {
    await step(false);
    if (converged(world) === undefined) {
      convergedAfter = i + 1;
      break;
    }
  }
  if (convergedAfter === undefined)
    inv.violations.push({ kind: "stall", atMs: world.now(), message: converged(world) ?? "" });
  const writes = world.kube.writes;
  return {
    violations: inv.violations,
    trace: world.trace,
    faults,
    convergedAfter,
    evictions: writes.filter((w) => w.startsWith("evict Pod")).length,
    removals: world.recorder.reasons().filter((r) => r === "MemberRemoved").length,
  };
}

function draw(x: number): OperatorFault {
  const total = WEIGHTS.reduce((s, [, w]) => s + w, 0);
  let at = x * total;
  for (const [f, w] of WEIGHTS) {
    at -= w;
    if (at < 0) return f;
  }
  return WEIGHTS[WEIGHTS.length - 1]![0];
}

/** Applies one fault; false when it did not apply (nothing to act on). */
function injectFault(world: OperatorLoopWorld, f: OperatorFault, nextImage: () => string): boolean {
  const rng = world.rng;
  const replicas = world.statefulSet()?.spec?.replicas ?? 0;
  const live = [...world.brokers.byId.values()].filter((b) => b.process === "up" && b.ordinal < replicas);
  const some = live.length > 0 ? rng.pick(live) : undefined;
  switch (f) {
    case "crash":
      if (some === undefined) return false;
      world.crash(some, rng.range(3, 40) * 1000);
      return true;
    case "freeze":
      if (some === undefined) return false;
      world.freeze(some, rng.range(3, 60) * 1000);
      return true;
    case "node-not-ready":
      if (some === undefined) return false;
      world.failNode(some.id, rng.range(5, 90) * 1000);
      return true;
    case "force-delete":
      if (replicas === 0) return false;
      world.forceDelete(rng.int(replicas));
      return true;
    case "stuck-drain":
      if (some === undefined) return false;
      some.dispatchHeldUntilMs = world.now() + rng.range(10, 120) * 1000;
      world.log(`${some.id} dispatch held for a while (a held partition)`);
      return true;
    case "stale-cache":
      world.cachesPinnedUntilMs = world.now() + rng.range(3, 30) * 1000;
      world.log("operator caches stop following the API server (silently)");
      return true;
    case "api-brownout":
      world.brownoutUntilMs = world.now() + rng.range(5, 90) * 1000;
      return true;
    case "lease-lost-mid-pass":
      world.leaseLossAfter = rng.int(4);
      return true;
    case "lease-lost":
      world.loseLeaseNow(rng.range(0, 20) * 1000);
      return true;
    case "set-image":
      world.userSetImage(nextImage());
      return true;
    case "set-replicas": {
      const n = rng.range(2, 5);
      if (n === world.cluster()?.spec.replicas) return false;
      world.userSetReplicas(n);
      return true;
    }
  }
}

/** Undefined when the cluster is where its spec says; else what is not. */
export function converged(world: OperatorLoopWorld): string | undefined {
  const c = world.cluster();
  const sts = world.statefulSet();
  if (c === undefined || sts === undefined) return "no cluster or StatefulSet";
  const want = c.spec.replicas ?? 3;
  const rev = world.templateRevision();
  const problems: string[] = [];
  if (sts.spec?.replicas !== want) problems.push(`StatefulSet replicas ${sts.spec?.replicas}, spec ${want}`);
  for (let i = 0; i < want; i++) {
    const pod = world.pod(i);
    if (pod === undefined) problems.push(`${CLUSTER}-${i} has no pod`);
    else if (!world.podReady(pod)) problems.push(`${CLUSTER}-${i} not Ready`);
    else if (pod.metadata?.labels?.["controller-revision-hash"] !== rev)
      problems.push(`${CLUSTER}-${i} outdated`);
  }
  const members = c.status?.members ?? [];
  for (let i = 0; i < want; i++) {
    const m = members.find((x) => x.ordinal === i);
    if (m?.state !== "Active") problems.push(`member ${CLUSTER}-${i} is ${m?.state ?? "missing"}`);
  }
  if (c.status?.roll) problems.push(`roll of ${c.status.roll.podInFlight} in flight`);
  const scale = c.status?.scale;
  if (scale?.decommissioning !== undefined)
    problems.push(`decommission of ${scale.decommissioning} in flight`);
  if ((scale?.moves ?? []).length > 0) problems.push(`${scale?.moves?.length} move(s) in flight`);
  for (const b of world.brokers.byId.values())
    if (b.draining && b.process === "up") problems.push(`${b.id} still draining`);
  if (problems.length === 0) return undefined;
  const conds = ["Ready", "Progressing", "Degraded"]
    .map((t) => {
      const x = getCondition(c.status?.conditions, t);
      return `${t}=${x?.status ?? "?"}${x?.reason ? `/${x.reason}` : ""}${x?.message ? ` (${x.message})` : ""}`;
    })
    .join("; ");
  return `${problems.join(", ")} — status: ${conds}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seed = Number(process.argv[2] ?? 1);
  const steps = Number(process.argv[3] ?? 600);
  const r = await runOperatorSeed(defaultOperatorConfig(seed, steps));
  console.log(r.trace.join("\n"));
  console.log(
    `\nseed ${seed}: ${r.violations.length} violation(s), converged after ${r.convergedAfter ?? "never"} quiet steps, ${r.evictions} evictions, ${r.removals} removals`,
  );
  for (const v of r.violations) console.log(`  ${v.kind}: ${v.message}`);
  process.exitCode = r.violations.length > 0 ? 1 : 0;
}
