// `npm run bench:profile`: runs the broker under `node --cpu-prof` while
// loading it with single 1 KiB produces (64 connections) and then 1 MiB
// batches (4 connections), and prints the functions with the most self time
// (the .cpuprofile is kept for a flame graph: open it in Chrome DevTools or
// speedscope). PROFILE_SECONDS (default 15) per phase; PROFILE_WORKLOAD=single|batch|both.
// It also reports the broker's CPU time per request (utime + stime from
// /proc/<pid>/stat over the phase divided by the requests served): on a
// shared machine that is far steadier than throughput, so before/after
// comparisons of a change use it. PROFILE_CPU=0 runs without --cpu-prof
// (the profiler itself costs CPU).

import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { startNarad } from "../broker/test/harness/process.ts";
import { load } from "./lib/load.ts";
import { createTopic } from "./lib/report.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name + file:line) in ms, and the total, from a .cpuprofile. */
export function selfTimes(p: CpuProfile): { total: number; rows: Array<{ fn: string; ms: number }> } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i] as number);
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    if (n === undefined) continue;
    total += dt;
    const f = n.callFrame;
    const file = f.url.replace(/^file:\/\/.*?\/(broker|node_modules)\//, "$1/");
    const key = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const rows = [...self].map(([fn, ms]) => ({ fn, ms })).sort((a, b) => b.ms - a.ms);
  return { total, rows };
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<void> {
  const seconds = Number(process.env.PROFILE_SECONDS ?? 15);
  const workload = process.env.PROFILE_WORKLOAD ?? "both";
  const dir = process.env.PROFILE_DIR ?? mkdtempSync(join(tmpdir(), "narad-prof-"));
  const profiling = process.env.PROFILE_CPU !== "0";
  const narad = await startNarad(
    profiling ? { env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } } : {},
  );
  const pid = narad.child.pid as number;
  try {
    await createTopic(narad.url, "prof", 8);
    if (workload !== "batch") {
      const c0 = cpuSeconds(pid);
      const r = await load({
        url: `${narad.url}/v1/topics/prof/produce`,
        connections: 64,
        seconds,
        body: Buffer.alloc(1024, "x"),
      });
      const us = ((cpuSeconds(pid) - c0) / r.total) * 1e6;
      console.log(
        `single 1 KiB: ${r.requestsPerSec.toFixed(0)} req/s, p99 ${r.p99Ms} ms, broker CPU ${us.toFixed(0)} µs/request`,
      );
    }
    if (workload !== "single") {
      const payload = Buffer.alloc(1024, "y");
      const batch = encodeBinaryBatch(
        Array.from({ length: 1000 }, () => ({ partition: -1, key: Buffer.alloc(0), payload })),
      );
      const c0 = cpuSeconds(pid);
      const r = await load({
        url: `${narad.url}/v1/topics/prof/produce-batch`,
        connections: 4,
        seconds,
        body: batch,
        headers: { "content-type": "application/vnd.narad.batch" },
      });
      const us = ((cpuSeconds(pid) - c0) / (r.total * 1000)) * 1e6;
      console.log(
        `batch 1000 x 1 KiB: ${(r.requestsPerSec * 1000).toFixed(0)} msg/s, broker CPU ${us.toFixed(2)} µs/message`,
      );
    }
  } finally {
    await narad.stop();
  }
  if (!profiling) return;
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  const { total, rows } = selfTimes(JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile);
  console.log(`\nprofile ${join(dir, file)}: ${total.toFixed(0)} ms sampled; top self time:`);
  for (const r of rows.slice(0, Number(process.env.PROFILE_TOP ?? 30))) {
    console.log(
      `${((100 * r.ms) / total).toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(7)} ms  ${r.fn}`,
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
