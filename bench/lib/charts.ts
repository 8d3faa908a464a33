// The charts the benchmarks draw from their own data, as chart specs (pure:
// the SVG text comes from line-chart.ts, the files from report.ts's
// writeCharts). Each takes the per-window or per-size series a benchmark
// recorded and a note saying how it was measured (duration, machine, date),
// which every chart carries as its subtitle so a plot is never read without it.
import type { LineChartSpec } from "./line-chart.ts";

export interface NamedChart {
  /** The file under bench/ the chart is written to, e.g. soak-p99.svg. */
  file: string;
  spec: LineChartSpec;
}

/** One soak window: `t` is seconds since the measured soak began, at the window's end. */
export interface SoakWindow {
  t: number;
  /** The rate offered open-loop (req/s); `rate` is what the broker accepted. */
  offered: number;
  rate: number;
  p99: number;
  backlog: number;
  rssMiB: number;
  non2xx: number;
}

export function soakCharts(windows: readonly SoakWindow[], note: string): NamedChart[] {
  const over = (f: (w: SoakWindow) => number): Array<[number, number]> => windows.map((w) => [w.t, f(w)]);
  const xLabel = "time since the soak began (s)";
  return [
    {
      file: "soak-throughput.svg",
      spec: {
        title: "Soak: accepted produce rate per 10 s window",
        subtitle: note,
        xLabel,
        yLabel: "req/s",
        series: [
          { name: "accepted", points: over((w) => w.rate) },
          { name: "offered", points: over((w) => w.offered) },
        ],
      },
    },
    {
      file: "soak-p99.svg",
      spec: {
        title: "Soak: p99 produce latency per 10 s window",
        subtitle: note,
        xLabel,
        yLabel: "p99 (ms)",
        series: [{ name: "p99", points: over((w) => w.p99) }],
      },
    },
    {
      file: "soak-rss.svg",
      spec: {
        title: "Soak: broker RSS",
        subtitle: note,
        xLabel,
        yLabel: "RSS (MiB)",
        series: [{ name: "RSS", points: over((w) => w.rssMiB) }],
      },
    },
    {
      file: "soak-wal-backlog.svg",
      spec: {
        title: "Soak: WAL backlog (records not yet dispatched, mean per window)",
        subtitle: note,
        xLabel,
        yLabel: "records",
        series: [{ name: "WAL backlog", points: over((w) => w.backlog) }],
      },
    },
  ];
}

/** One recovery run: what was on disk at the kill, and how long the restart took. */
export interface RecoveryPoint {
  dataDirMiB: number;
  walMiB: number;
  readyMs: number;
  allVisibleMs: number;
  /** Records acknowledged before the kill, and visible after the restart (equal: none lost). */
  acceptedRecords: number;
  visibleRecords: number;
}

export function recoveryChart(points: readonly RecoveryPoint[], note: string): NamedChart {
  const by = (f: (p: RecoveryPoint) => number): Array<[number, number]> =>
    points.map((p) => [p.dataDirMiB, f(p) / 1000]);
  return {
    file: "recovery.svg",
    spec: {
      title: "Recovery after kill -9 against data on disk",
      subtitle: note,
      xLabel: "data dir at the kill (MiB)",
      yLabel: "seconds after the restart",
      series: [
        { name: "ready (/readyz)", points: by((p) => p.readyMs) },
        { name: "every accepted record visible", points: by((p) => p.allVisibleMs) },
      ],
    },
  };
}
