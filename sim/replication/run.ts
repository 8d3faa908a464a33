// CLI: npm run sim:replication -- [--seeds N] [--first F] [--seed S] [--steps M] [--names-only] [--trace LINES] [--verbose]
//   --seeds N       seeds F..F+N-1 (F = --first, default 1)
//   --seed S        one seed (replay); --verbose prints its trace tail even when it passes
//   --names-only    the ADR's first design: an ISR of member names, no volume identity
//   --hwm-only-expand  the ADR's first design: a replica rejoins the ISR once its end reached the HWM
//   --absolute-only  judge only loss, truncation, divergence and convergence, not the ISR's promises
//   --no-floor      the ADR's first design: HWM over any ISR size, the old leader always leaves the ISR
// Exit code 1 when any seed violates an invariant; each failure prints its
// replay command and the last steps of its trace.

import {
  defaultReplicationConfig,
  type ReplicationFault,
  replicationFaults,
  replicationReplayCommand,
  runReplicationSeed,
} from "./run-seed.ts";

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const num = (name: string, dflt: number): number => {
  const v = arg(name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
};

const steps = num("--steps", 1_500);
const first = num("--first", 1);
const seeds =
  arg("--seed") !== undefined
    ? [num("--seed", 0)]
    : Array.from({ length: num("--seeds", 50) }, (_, i) => first + i);
const volumeIdentity = !argv.includes("--names-only");
const minInsyncFloor = !argv.includes("--no-floor");
const epochStartRule = !argv.includes("--hwm-only-expand");
const verbose = argv.includes("--verbose");
const traceTail = num("--trace", 40);
const absoluteOnly = argv.includes("--absolute-only");

const started = performance.now();
const faults = new Map<ReplicationFault, number>();
const totals = { produced: 0, acked: 0, refused: 0, elections: 0, isrChanges: 0, truncations: 0 };
const byKind = new Map<string, number>();
let failed = 0;
for (const seed of seeds) {
  const cfg = {
    ...defaultReplicationConfig(seed, steps, { volumeIdentity, minInsyncFloor, epochStartRule }),
    traceTail,
    absoluteOnly,
  };
  const r = runReplicationSeed(cfg);
  for (const [k, v] of r.faults) faults.set(k, (faults.get(k) ?? 0) + v);
  totals.produced += r.produced;
  totals.acked += r.acked;
  totals.refused += r.refusedNotEnough;
  totals.elections += r.elections;
  totals.isrChanges += r.isrChanges;
  totals.truncations += r.truncations;
  if (r.violations.length > 0) {
    failed++;
    const kind = r.violations[0]?.kind ?? "?";
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    console.log(
      `\nSEED ${seed} FAILED at step ${r.steps}: ${r.violations.map((v) => `${v.kind}: ${v.message}`).join("\n  ")}`,
    );
    console.log(`replay: ${replicationReplayCommand(cfg)}`);
    console.log(`last ${r.trace.length} trace lines:\n  ${r.trace.join("\n  ")}`);
  } else if (verbose) {
    console.log(`seed ${seed} ok (${r.steps} steps, ${r.acked} acked)\n  ${r.trace.join("\n  ")}`);
  }
}
const secs = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `\n${seeds.length} seeds, ${failed} failed (${[...byKind].map(([k, v]) => `${k} ${v}`).join(", ") || "none"}); ${secs}s; mode: ${volumeIdentity ? "volume identity" : "names only"}, ${minInsyncFloor ? "min-insync floor" : "no floor"}, ${epochStartRule ? "epoch-start expansion" : "HWM-only expansion"}`,
);
console.log(
  `records: ${totals.acked} of ${totals.produced} acknowledged; ${totals.refused} produce refused not_enough_replicas; ${totals.elections} elections, ${totals.isrChanges} ISR changes, ${totals.truncations} truncations`,
);
console.log(`faults: ${replicationFaults.map((f) => `${f} ${faults.get(f) ?? 0}`).join(", ")}`);
if (failed > 0) process.exitCode = 1;
