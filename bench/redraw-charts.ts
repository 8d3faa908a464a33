// `npm run bench:charts`: draws the benchmarks' SVG charts again from the
// series the last runs wrote (bench/soak-series.json, bench/recovery-series.json),
// without running a benchmark: for a change to how charts are drawn.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../broker/test/harness/process.ts";
import { type RecoveryPoint, recoveryChart, type SoakWindow, soakCharts } from "./lib/charts.ts";
import { writeCharts } from "./lib/report.ts";

function series<T>(file: string): { note: string; series: T[] } | undefined {
  const path = join(repoRoot, "bench", file);
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as { note: string; series: T[] };
}

const soak = series<SoakWindow>("soak-series.json");
if (soak !== undefined) writeCharts(soakCharts(soak.series, soak.note));
const recovery = series<RecoveryPoint>("recovery-series.json");
if (recovery !== undefined) writeCharts([recoveryChart(recovery.series, recovery.note)]);
