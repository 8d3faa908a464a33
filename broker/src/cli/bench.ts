// `narad bench`: produce load through the client's batching producer and
// report throughput and latency (from buffered to 202). A live progress bar
// on stderr when it is a TTY, a plain line per second otherwise.

import { randomBytes } from "node:crypto";
import { TopicExistsError } from "../../../client/index.ts";
import { type Command, intOption, UsageError } from "./args.ts";
import { bytes, count, table } from "./format.ts";

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export const bench: Command = {
  options: {
    messages: { type: "string" },
    size: { type: "string" },
    concurrency: { type: "string" },
    partitions: { type: "string" },
    "batch-size": { type: "string" },
    "linger-ms": { type: "string" },
    topic: { type: "string" },
    keep: { type: "boolean" },
  },
  async run(values, args, io) {
    if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"`);
    const messages = intOption(values, "messages", 1, 100_000) as number;
    const size = intOption(values, "size", 0, 1024) as number;
    const concurrency = intOption(values, "concurrency", 1, 4) as number;
    const partitions = intOption(values, "partitions", 1, 3) as number;
    const batchSize = intOption(values, "batch-size", 1, 500) as number;
    const lingerMs = intOption(values, "linger-ms", 0, 5) as number;
    const client = io.client();
    const given = values.topic as string | undefined;
    const topic = given ?? `bench-${Date.now().toString(36)}`;
    try {
      await client.topics.create(topic, { partitions });
    } catch (e) {
      if (!(e instanceof TopicExistsError && given !== undefined)) throw e;
    }

    const payload = randomBytes(Math.ceil(size / 2))
      .toString("hex")
      .slice(0, size);
    const latencies = new Float64Array(messages);
    let next = 0;
    let done = 0;
    let failed = 0;
    let firstError: unknown;
    const t0 = performance.now();
    const tty = process.stderr.isTTY === true && !io.json;
    const progress = () => {
      const elapsed = (performance.now() - t0) / 1000;
      const rate = done / Math.max(elapsed, 0.001);
      if (tty) {
        const width = 30;
        const filled = Math.round((done / messages) * width);
        process.stderr.write(
          `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${((done / messages) * 100).toFixed(0).padStart(3)}%  ${count(done)}/${count(messages)}  ${count(rate)} msg/s `,
        );
      } else if (!io.json) {
        io.err(`bench: ${count(done)}/${count(messages)} acknowledged, ${count(rate)} msg/s\n`);
      }
    };
    const timer = setInterval(progress, tty ? 200 : 1000);

    const worker = async () => {
      const producer = client.producer(topic, {
        batchSize,
        lingerMs,
        maxBufferedRecords: Math.max(batchSize * 4, Math.ceil(20_000 / concurrency)),
      });
      const pending: Promise<void>[] = [];
      for (let i = next++; i < messages; i = next++) {
        const sent = await producer.send(payload);
        const start = performance.now();
        pending.push(
          sent.delivered.then(
            () => {
              latencies[i] = performance.now() - start;
              done++;
            },
            (e: unknown) => {
              failed++;
              firstError ??= e;
              latencies[i] = Number.NaN;
            },
          ),
        );
      }
      await producer.close().catch(() => {});
      await Promise.all(pending);
    };
    try {
      await Promise.all(Array.from({ length: concurrency }, () => worker()));
    } finally {
      clearInterval(timer);
    }
    const seconds = (performance.now() - t0) / 1000;
    if (tty) {
      progress();
      process.stderr.write("\n");
    }
    const ok = latencies.filter((v) => !Number.isNaN(v)).sort();
    const summary = {
      topic,
      messages,
      acknowledged: done,
      failed,
      size_bytes: size,
      concurrency,
      seconds: Number(seconds.toFixed(3)),
      msg_per_sec: Math.round(done / seconds),
      mib_per_sec: Number(((done * size) / seconds / 1024 / 1024).toFixed(2)),
      p50_ms: Number(percentile(ok, 50).toFixed(1)),
      p99_ms: Number(percentile(ok, 99).toFixed(1)),
      max_ms: Number(percentile(ok, 100).toFixed(1)),
    };
    if (given === undefined && values.keep !== true) await client.topics.delete(topic).catch(() => {});
    if (io.json) io.out(`${JSON.stringify(summary)}\n`);
    else {
      io.out(
        table(
          ["", ""],
          [
            ["messages", `${count(done)} acknowledged${failed > 0 ? `, ${count(failed)} failed` : ""}`],
            ["size", `${bytes(size)} each, ${concurrency} producer${concurrency === 1 ? "" : "s"}`],
            ["elapsed", `${seconds.toFixed(2)} s`],
            ["throughput", `${count(summary.msg_per_sec)} msg/s (${summary.mib_per_sec} MiB/s)`],
            ["latency p50", `${summary.p50_ms} ms (buffered → 202)`],
            ["latency p99", `${summary.p99_ms} ms`],
            ["latency max", `${summary.max_ms} ms`],
          ],
        )
          .split("\n")
          .slice(1)
          .join("\n"),
      );
    }
    if (failed > 0) {
      io.err(`narad: ${failed} messages failed; first: ${(firstError as Error).message}\n`);
      return 1;
    }
    return 0;
  },
};
