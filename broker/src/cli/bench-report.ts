// What `narad bench` prints, as pure functions of what it measured: the
// progress line (with an ETA), the summary document and its table.

import { bytes, count, keyValues } from "./format.ts";

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

/** Seconds as "42s", "3m05s", "1h02m"; "?" before there is a rate to extrapolate. */
export function etaText(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export interface Progress {
  done: number;
  total: number;
  elapsedSeconds: number;
}

function rateAndEta(p: Progress): { rate: number; eta: string } {
  const rate = p.done / Math.max(p.elapsedSeconds, 0.001);
  return { rate, eta: etaText(p.done === 0 ? Number.NaN : (p.total - p.done) / rate) };
}

/** The live bar for a terminal (redrawn in place with \r). */
export function progressBar(p: Progress, width = 30): string {
  const { rate, eta } = rateAndEta(p);
  const filled = Math.min(width, Math.round((p.done / p.total) * width));
  const pct = ((p.done / p.total) * 100).toFixed(0).padStart(3);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${pct}%  ${count(p.done)}/${count(p.total)}  ${count(rate)} msg/s  ETA ${eta} `;
}

/** One line for a log (stderr not a terminal). */
export function progressLine(p: Progress): string {
  const { rate, eta } = rateAndEta(p);
  return `bench: ${count(p.done)}/${count(p.total)} acknowledged, ${count(rate)} msg/s, ETA ${eta}\n`;
}

export interface BenchRun {
  topic: string;
  /** Asked for (--messages). */
  messages: number;
  /** Handed to the producers (fewer than messages when interrupted). */
  sent: number;
  acknowledged: number;
  failed: number;
  sizeBytes: number;
  concurrency: number;
  seconds: number;
  /** Latencies of the acknowledged messages, in ms. */
  latenciesMs: Float64Array;
  interrupted: boolean;
}

export interface BenchSummary {
  topic: string;
  messages: number;
  sent: number;
  acknowledged: number;
  failed: number;
  interrupted: boolean;
  sizeBytes: number;
  concurrency: number;
  seconds: number;
  msgPerSec: number;
  mibPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function benchSummary(run: BenchRun): BenchSummary {
  const sorted = run.latenciesMs.slice().sort();
  const seconds = Math.max(run.seconds, 0.001);
  return {
    topic: run.topic,
    messages: run.messages,
    sent: run.sent,
    acknowledged: run.acknowledged,
    failed: run.failed,
    interrupted: run.interrupted,
    sizeBytes: run.sizeBytes,
    concurrency: run.concurrency,
    seconds: Number(run.seconds.toFixed(3)),
    msgPerSec: Math.round(run.acknowledged / seconds),
    mibPerSec: Number(((run.acknowledged * run.sizeBytes) / seconds / 1024 / 1024).toFixed(2)),
    p50Ms: Number(percentile(sorted, 50).toFixed(1)),
    p99Ms: Number(percentile(sorted, 99).toFixed(1)),
    maxMs: Number(percentile(sorted, 100).toFixed(1)),
  };
}

export function summaryText(s: BenchSummary): string {
  const acked = `${count(s.acknowledged)} acknowledged${s.failed > 0 ? `, ${count(s.failed)} failed` : ""}`;
  return keyValues([
    [
      "messages",
      s.interrupted ? `${acked} (interrupted after ${count(s.sent)} of ${count(s.messages)})` : acked,
    ],
    ["size", `${bytes(s.sizeBytes)} each, ${s.concurrency} producer${s.concurrency === 1 ? "" : "s"}`],
    ["elapsed", `${s.seconds.toFixed(2)} s`],
    ["throughput", `${count(s.msgPerSec)} msg/s (${s.mibPerSec} MiB/s)`],
    ["latency p50", `${s.p50Ms} ms (buffered → 202)`],
    ["latency p99", `${s.p99Ms} ms`],
    ["latency max", `${s.maxMs} ms`],
  ]);
}
