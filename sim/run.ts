// CLI: npm run sim -- --seeds N [--steps M] [--seed S] [--enable flag,flag | --all] [--first F] [--trace LINES]
//   --seed S      one seed (replay); prints its whole trace tail even when it passes with --verbose
//   --seeds N     seeds F..F+N-1 (F = --first, default 1)
//   --enable      fault families that reach known bugs (config.ts FaultFlags); --all turns on all
// Exit code 1 when any seed violates an invariant; each failure prints its
// replay command and the last steps of its trace.

import { allFlags, defaultConfig, type FaultFlags, fixedFamilyFlags } from "./config.ts";
import { FaultCounts } from "./faults.ts";
import { replayCommand, runSeed } from "./run-seed.ts";

function parse(argv: readonly string[]): {
  seeds: number[];
  steps: number;
  flags: FaultFlags;
  verbose: boolean;
  trace: number;
} {
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const num = (name: string, dflt: number): number => {
    const v = arg(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 0)
      throw new Error(`${name} must be a non-negative integer, got ${v}`);
    return n;
  };
  const flags: FaultFlags = argv.includes("--all") ? { ...allFlags } : { ...fixedFamilyFlags };
  for (const f of (arg("--enable") ?? "").split(",").filter((s) => s !== "")) {
    if (!(f in flags)) throw new Error(`unknown flag ${f}; known: ${Object.keys(flags).join(", ")}`);
    flags[f as keyof FaultFlags] = true;
  }
  const steps = num("--steps", 800);
  const one = arg("--seed");
  const first = num("--first", 1);
  const seeds =
    one !== undefined ? [num("--seed", 0)] : Array.from({ length: num("--seeds", 20) }, (_, i) => first + i);
  return { seeds, steps, flags, verbose: argv.includes("--verbose"), trace: num("--trace", 40) };
}

async function main(): Promise<void> {
  const { seeds, steps, flags, verbose, trace } = parse(process.argv.slice(2));
  const total = new FaultCounts();
  let failed = 0;
  let totalSteps = 0;
  let produced = 0;
  let acked = 0;
  const seams = { expiredHold: 0, forgottenDoubt: 0, skipForgotten: 0, prunedDoubt: 0 };
  const started = performance.now();
  for (const seed of seeds) {
    const cfg = { ...defaultConfig(seed, steps, flags), traceTail: trace };
    const r = await runSeed(cfg);
    total.merge(r.faults);
    totalSteps += r.steps;
    produced += r.produced;
    acked += r.acked;
    for (const k of Object.keys(seams) as (keyof typeof seams)[]) seams[k] += r.seams[k];
    if (r.violations.length > 0) {
      failed++;
      console.log(
        `\nSEED ${seed} FAILED at step ${r.steps}: ${r.violations.map((v) => `${v.kind}: ${v.message}`).join("\n  ")}`,
      );
      console.log(`replay: ${replayCommand(cfg)}`);
      console.log(`last ${r.trace.length} trace lines:\n  ${r.trace.join("\n  ")}`);
    } else if (verbose) {
      console.log(`seed ${seed} ok (${r.steps} steps, ${r.acked} acked)\n  ${r.trace.join("\n  ")}`);
    }
  }
  const secs = ((performance.now() - started) / 1000).toFixed(1);
  const on = Object.entries(flags)
    .filter(([, v]) => v)
    .map(([k]) => k);
  console.log(
    `\n${seeds.length} seeds, ${failed} failed; ${totalSteps} steps in ${secs}s; ${acked} of ${produced} produced records acknowledged; flags on: ${on.join(", ") || "none"}`,
  );
  console.log(`faults injected:\n${total.format()}`);
  console.log(
    `records that reached a seam (duplicates excused): expired in-doubt hold ${seams.expiredHold}, doubt forgotten by a crash ${seams.forgottenDoubt}, skip-set lost in a crash (F1) ${seams.skipForgotten}, doubt pruned while undone ${seams.prunedDoubt}`,
  );
  if (failed > 0) process.exitCode = 1;
}

await main();
