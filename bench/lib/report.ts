// Shared reporting for the benchmark scripts: results as
// [{name, value, unit, baseline, ratio}] in a JSON file and a markdown table
// that replaces the text of docs/benchmarks.md between `<!-- <marker>:start -->`
// and `<!-- <marker>:end -->` (skipped with BENCH_DOCS=0); and the series a
// benchmark recorded over time or size, as JSON and as SVG charts beside it.

import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../../broker/test/harness/process.ts";
import type { NamedChart } from "./charts.ts";
import { lineChart } from "./line-chart.ts";

export interface Result {
  name: string;
  value: number;
  unit: string;
  baseline: number | null;
  ratio: number | null;
}

export class Report {
  readonly results: Result[] = [];

  record(name: string, value: number, unit: string, baseline: number | null = null): void {
    this.results.push({ name, value, unit, baseline, ratio: baseline ? value / baseline : null });
    process.stderr.write(
      `  ${name}: ${value.toFixed(2)} ${unit}${baseline ? ` (ratio ${(value / baseline).toFixed(2)})` : ""}\n`,
    );
  }

  /** Writes bench/<file> with the results; returns its path. */
  writeResults(file: string): string {
    const out = join(repoRoot, "bench", file);
    writeFileSync(out, `${JSON.stringify(this.results, null, 2)}\n`);
    return out;
  }

  /** Writes bench/<file> and the docs table between the marker comments. */
  write(file: string, marker: string, note: string): void {
    const out = this.writeResults(file);
    const table = [
      `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}; ${note}.`,
      "",
      "| benchmark | value | unit | baseline | ratio |",
      "|---|---:|---|---:|---:|",
      ...this.results.map(
        (r) =>
          `| ${r.name} | ${r.value.toFixed(2)} | ${r.unit} | ${r.baseline?.toFixed(r.baseline < 10 ? 2 : 0) ?? ""} | ${r.ratio?.toFixed(2) ?? ""} |`,
      ),
    ].join("\n");
    console.log(`\n${table}`);
    writeDocsTable(marker, table);
    console.log(`\nwrote ${out}`);
  }
}

/** Writes bench/<file> with the raw series a run recorded (what its charts are drawn from). */
export function writeSeries(file: string, note: string, series: unknown): void {
  const out = join(repoRoot, "bench", file);
  writeFileSync(out, `${JSON.stringify({ note, series }, null, 2)}\n`);
  console.log(`wrote ${out}`);
}

/** Writes each chart as bench/<file>.svg, where docs/benchmarks.md links it. */
export function writeCharts(charts: readonly NamedChart[]): void {
  for (const c of charts) {
    const out = join(repoRoot, "bench", c.file);
    writeFileSync(out, lineChart(c.spec));
    console.log(`wrote ${out}`);
  }
}

/** How a run was measured, for chart subtitles: date, machine, load average at the end. */
export function runNote(what: string): string {
  const load = loadavg()[0] ?? 0;
  return `${what}; ${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average ${load.toFixed(1)}`;
}

/** The page whose generated tables the benchmarks keep current. */
const BENCH_PAGE = join(repoRoot, "docs", "benchmarks.md");

/**
 * Replaces the table between `<!-- marker:start -->` and `<!-- marker:end -->`
 * in docs/benchmarks.md, so the page shows the numbers of the last run.
 * BENCH_DOCS=0 (or the older BENCH_README=0) leaves the page alone.
 */
export function writeDocsTable(marker: string, table: string): void {
  if (process.env.BENCH_DOCS === "0" || process.env.BENCH_README === "0") return;
  const page = readFileSync(BENCH_PAGE, "utf8");
  const start = `<!-- ${marker}:start -->`;
  const end = `<!-- ${marker}:end -->`;
  const a = page.indexOf(start);
  const b = page.indexOf(end);
  if (a < 0 || b < a) return;
  writeFileSync(BENCH_PAGE, `${page.slice(0, a + start.length)}\n${table}\n${page.slice(b)}`);
  console.log("updated docs/benchmarks.md");
}

export async function createTopic(url: string, name: string, partitions: number): Promise<void> {
  const res = await fetch(`${url}/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, partitions }),
  });
  if (res.status !== 201) throw new Error(`create topic: ${res.status} ${await res.text()}`);
}

/** Samples a process's RSS every intervalMs until stopped; reports the peak. */
export function rssSampler(sample: () => number, intervalMs = 100): { stop(): number } {
  let peak = sample();
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, sample());
    } catch {
      // the process exited
    }
  }, intervalMs);
  return {
    stop: () => {
      clearInterval(t);
      return peak;
    },
  };
}
