// The simulation's fixed budget in `npm test`: seeds 1..60 with the fault
// families of known, unfixed bugs switched off (config.ts FaultFlags) must
// run without a violation, must actually inject the faults they claim to,
// and must be deterministic. A failure prints the replay command.

import { describe, expect, it } from "vitest";
import { defaultConfig, fixedFamilyFlags } from "./config.ts";
import { FaultCounts, type FaultKind } from "./faults.ts";
import { replayCommand, runSeed } from "./run-seed.ts";

const seeds = 60;
const steps = 800;

describe("deterministic simulation", () => {
  it(`seeds 1..${seeds} (${steps} steps each, then quiesce) keep every invariant`, {
    timeout: 120_000,
  }, async () => {
    const total = new FaultCounts();
    const failures: string[] = [];
    let acked = 0;
    for (let seed = 1; seed <= seeds; seed++) {
      const cfg = defaultConfig(seed, steps, fixedFamilyFlags);
      const r = await runSeed(cfg);
      total.merge(r.faults);
      acked += r.acked;
      if (r.violations.length > 0)
        failures.push(
          `${replayCommand(cfg)}\n  ${r.violations.map((v) => `${v.kind}: ${v.message}`).join("\n  ")}\n  ${r.trace.slice(-15).join("\n  ")}`,
        );
    }
    expect(failures, failures.join("\n\n")).toEqual([]);
    // The budget must really exercise the system: records, and each fault family that is on.
    expect(acked).toBeGreaterThan(seeds * 100);
    const mustFire: FaultKind[] = [
      "crash",
      "down",
      "roll-maintenance",
      "decommission-removed",
      "stale-view",
      "drop-request",
      "drop-answer",
      "late-answer",
      "api-unavailable",
      "move",
      "topic-delete",
      "topic-create",
      "crash@wal-append-before-202",
      "crash@commit-before-checkpoint",
      "crash@owner-after-commit-before-answer",
    ];
    for (const k of mustFire) expect(total.counts.get(k) ?? 0, k).toBeGreaterThan(0);
  });

  it("is deterministic: the same seed gives the same trace", async () => {
    const a = await runSeed({ ...defaultConfig(7, 300), traceTail: 1_000 });
    const b = await runSeed({ ...defaultConfig(7, 300), traceTail: 1_000 });
    expect(a.trace.length).toBeGreaterThan(50);
    expect(b.trace).toEqual(a.trace);
    expect(b.acked).toBe(a.acked);
  });
});
