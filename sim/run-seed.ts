// Runs one seed: the fault phase (cfg.steps steps, invariants after each),
// then the quiesce phase (faults off until everything settles), then the
// exactly-once check. Returns what the runner and the test need.

import type { SimConfig } from "./config.ts";
import type { FaultCounts } from "./faults.ts";
import type { Violation } from "./invariants.ts";
import { World } from "./world.ts";

export interface SeedResult {
  seed: number;
  steps: number;
  violations: Violation[];
  /** The last trace lines (the failure's context). */
  trace: string[];
  faults: FaultCounts;
  produced: number;
  acked: number;
  passes: number;
  actions: Map<string, number>;
  /** Records that reached a documented or flagged-off seam (their duplicates are excused). */
  seams: { expiredHold: number; forgottenDoubt: number; skipForgotten: number; prunedDoubt: number };
}

export async function runSeed(cfg: SimConfig): Promise<SeedResult> {
  const w = new World(cfg);
  for (let i = 0; i < cfg.steps && w.violations.length === 0; i++) await w.step();
  if (w.violations.length === 0) await w.quiesce();
  return {
    seed: cfg.seed,
    steps: w.stepNo,
    violations: w.violations,
    trace: w.trace.slice(-cfg.traceTail),
    faults: w.faults,
    produced: w.stats.produced,
    acked: w.stats.acked,
    passes: w.stats.passes,
    actions: w.stats.actions,
    seams: {
      expiredHold: w.ghosts.mayBeTwice.size,
      forgottenDoubt: w.ghosts.forgottenDoubt.size,
      skipForgotten: w.ghosts.skipForgotten.size,
      prunedDoubt: w.ghosts.prunedDoubt.size,
    },
  };
}

/** The command that replays a seed with the same flags. */
export function replayCommand(cfg: SimConfig): string {
  const on = Object.entries(cfg.flags)
    .filter(([, v]) => v)
    .map(([k]) => k);
  return `npm run sim -- --seed ${cfg.seed} --steps ${cfg.steps}${on.length > 0 ? ` --enable ${on.join(",")}` : ""}`;
}
