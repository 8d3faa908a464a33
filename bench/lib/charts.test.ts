import { describe, expect, it } from "vitest";
import { recoveryChart, soakCharts } from "./charts.ts";
import { lineChart } from "./line-chart.ts";

describe("the benchmarks' charts", () => {
  const windows = [1, 2, 3].map((i) => ({
    t: i * 10,
    offered: 2585,
    rate: 2500 + i,
    p99: 40 + i,
    backlog: 700 + i,
    rssMiB: 380 + i,
    non2xx: 0,
  }));

  it("soak: rate against offered, p99, RSS and WAL backlog, one point per window, the note as subtitle", () => {
    const charts = soakCharts(windows, "60 s quick run");
    expect(charts.map((c) => c.file)).toEqual([
      "soak-throughput.svg",
      "soak-p99.svg",
      "soak-rss.svg",
      "soak-wal-backlog.svg",
    ]);
    const [rate, p99, rss, backlog] = charts.map((c) => c.spec);
    expect(rate!.series.map((s) => s.name)).toEqual(["accepted", "offered"]);
    expect(rate!.series[0]!.points).toEqual([
      [10, 2501],
      [20, 2502],
      [30, 2503],
    ]);
    expect(rate!.series[1]!.points.every(([, y]) => y === 2585)).toBe(true);
    expect(p99!.series[0]!.points.map(([, y]) => y)).toEqual([41, 42, 43]);
    expect(rss!.series[0]!.points.map(([, y]) => y)).toEqual([381, 382, 383]);
    expect(backlog!.series[0]!.points.map(([, y]) => y)).toEqual([701, 702, 703]);
    for (const c of charts) expect(lineChart(c.spec)).toContain(">60 s quick run</text>");
  });

  it("recovery: seconds to ready and to all visible against the data dir size", () => {
    const chart = recoveryChart(
      [
        {
          dataDirMiB: 256,
          walMiB: 100,
          readyMs: 900,
          allVisibleMs: 2000,
          acceptedRecords: 10,
          visibleRecords: 10,
        },
        {
          dataDirMiB: 1024,
          walMiB: 495,
          readyMs: 3381,
          allVisibleMs: 7588,
          acceptedRecords: 20,
          visibleRecords: 20,
        },
      ],
      "sweep",
    );
    expect(chart.file).toBe("recovery.svg");
    expect(chart.spec.series[0]!.points).toEqual([
      [256, 0.9],
      [1024, 3.381],
    ]);
    expect(chart.spec.series[1]!.points).toEqual([
      [256, 2],
      [1024, 7.588],
    ]);
    expect(lineChart(chart.spec).split("<polyline").length - 1).toBe(2);
  });
});
