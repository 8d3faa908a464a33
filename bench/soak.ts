// `npm run bench:soak` (not part of `npm run bench`: it takes 10 minutes).
// Measures the broker's maximum single-produce rate (1 KiB, 64 connections,
// closed loop, after a warm-up), then offers 70% of it open-loop for
// SOAK_SECONDS (default 600) in 10-second windows after an unmeasured
// warm-up (SOAK_WARMUP_SECONDS, default 60: JIT, heap sizing and page cache
// settle there, not in the first window), sampling per window the accepted
// rate, p99 latency, the WAL backlog (records not yet dispatched; the mean of
// one sample a second, a single sample is noise) and the broker's RSS.
// Reports the first two minutes against the last two: none of backlog, RSS
// or p99 may grow, and writes the windows (bench/soak-series.json) and their
// charts (bench/soak-*.svg: rate, p99, RSS, WAL backlog over time) beside
// bench/soak-results.json. 256 connections, so a window's latency spike cannot cap
// the offered rate (64 connections at 100 ms each carry only 640 req/s).

import { cpus } from "node:os";
import { startNarad } from "../broker/test/harness/process.ts";
import { type SoakWindow, soakCharts } from "./lib/charts.ts";
import { rssBytes } from "./lib/flood.ts";
import { load } from "./lib/load.ts";
import { scrape } from "./lib/metrics.ts";
import { createTopic, Report, runNote, writeCharts, writeSeries } from "./lib/report.ts";

const soakSeconds = Number(process.env.SOAK_SECONDS ?? 600);
const warmupSeconds = Number(process.env.SOAK_WARMUP_SECONDS ?? 60);
const windowSeconds = 10;
const connections = 256;
const MiB = 1 << 20;
const report = new Report();

type Window = SoakWindow;

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function main(): Promise<void> {
  process.stderr.write(
    `narad soak: ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, ${soakSeconds}s at 70% of the maximum\n`,
  );
  const narad = await startNarad();
  const windows: Window[] = [];
  let rate = 0;
  const pid = narad.child.pid as number;
  const body = Buffer.alloc(1024, "s");
  try {
    await createTopic(narad.url, "soak", 8);
    const url = `${narad.url}/v1/topics/soak/produce`;
    const max = await load({ url, connections: 64, seconds: 20, body, warmupSeconds: 10 });
    report.record("max_req_per_sec", max.requestsPerSec, "req/s");
    report.record("max_p99_ms", max.p99Ms, "ms");
    rate = Math.round(max.requestsPerSec * 0.7);
    process.stderr.write(`soaking at ${rate} req/s (${warmupSeconds} s warm-up first)\n`);
    await load({ url, connections, seconds: warmupSeconds, body, overallRate: rate });
    const n = Math.max(2, Math.round(soakSeconds / windowSeconds));
    for (let i = 0; i < n; i++) {
      const backlog = sampleEverySecond(
        async () => (await scrape(narad.url)).get("narad_wal_pending_records") ?? 0,
      );
      const r = await load({ url, connections, seconds: windowSeconds, body, overallRate: rate });
      const w: Window = {
        t: (i + 1) * windowSeconds,
        offered: rate,
        rate: r.requestsPerSec,
        p99: r.p99Ms,
        backlog: mean(await backlog.stop()),
        rssMiB: rssBytes(pid) / MiB,
        non2xx: r.non2xx + r.errors,
      };
      windows.push(w);
      process.stderr.write(
        `  window ${i + 1}/${n}: ${w.rate.toFixed(0)} req/s p99 ${w.p99} ms backlog ${w.backlog} rss ${w.rssMiB.toFixed(0)} MiB\n`,
      );
    }
    const k = Math.max(1, Math.min(12, Math.floor(windows.length / 3)));
    const first = windows.slice(0, k);
    const last = windows.slice(-k);
    report.record("soak_offered_req_per_sec", rate, "req/s", max.requestsPerSec);
    report.record("soak_accepted_req_per_sec", mean(windows.map((w) => w.rate)), "req/s", rate);
    report.record(
      "soak_non2xx",
      windows.reduce((a, w) => a + w.non2xx, 0),
      "req",
    );
    const pair = (name: string, unit: string, f: (w: Window) => number) => {
      const a = mean(first.map(f));
      const b = mean(last.map(f));
      report.record(`${name}_first_${k * windowSeconds}s`, a, unit);
      report.record(`${name}_last_${k * windowSeconds}s`, b, unit, a);
    };
    pair("p99_ms", "ms", (w) => w.p99);
    pair("wal_backlog_records", "records", (w) => w.backlog);
    pair("rss_mib", "MiB", (w) => w.rssMiB);
    report.record("rss_max_mib", Math.max(...windows.map((w) => w.rssMiB)), "MiB");
    report.record("wal_backlog_max_records", Math.max(...windows.map((w) => w.backlog)), "records");
  } finally {
    await narad.stop();
  }
  const what = `${soakSeconds} s (after a ${warmupSeconds} s warm-up) at 70% of the maximum single 1 KiB produce rate`;
  report.write("soak-results.json", "bench-soak", `${what}; ratios: last window group / first`);
  const note = runNote(`${soakSeconds} s at ${rate} req/s offered (70% of the maximum)`);
  writeSeries("soak-series.json", note, windows);
  writeCharts(soakCharts(windows, note));
}

/** Calls `sample` once a second until stop(), which resolves with every value seen. */
function sampleEverySecond(sample: () => Promise<number>): { stop: () => Promise<number[]> } {
  const values: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      values.push(await sample());
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return values;
    },
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
