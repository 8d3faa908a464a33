// `narad bench`: produce load through the client's batching producer and
// report throughput and latency (from buffered to 202). Progress with an ETA
// on stderr: a live bar on a terminal, a line every few seconds otherwise.
// Ctrl-C stops producing, lets what was sent finish, removes the topic it
// created and prints the summary of what ran (exit 130).

import { randomBytes } from "node:crypto";
import { TopicExistsError } from "../../../../client/index.ts";
import { type Command, intOption, UsageError } from "../args.ts";
import { benchSummary, progressBar, progressLine, summaryText } from "../bench-report.ts";

/** The shell's exit status for a process ended by SIGINT (128 + 2). */
const interruptedExitCode = 130;
const ttyRedrawMs = 200;
const logLineMs = 5000;

export const bench: Command = {
  summary: "produce load through the client; msg/s, p50/p99",
  options: {
    messages: { type: "string", value: "N", description: "messages to produce (default 100000)" },
    size: { type: "string", value: "B", description: "payload bytes (default 1024)" },
    concurrency: { type: "string", value: "C", description: "producers (default 4)" },
    partitions: { type: "string", value: "P", description: "partitions of the created topic (default 3)" },
    "batch-size": { type: "string", value: "N", description: "records per batch (default 500)" },
    "linger-ms": { type: "string", value: "N", description: "producer linger (default 5)" },
    topic: { type: "string", value: "T", description: "use this topic (created if missing, never removed)" },
    keep: { type: "boolean", description: "keep the created topic" },
  },
  notes:
    "Ctrl-C stops producing, removes the topic it created (unless --keep), prints the summary, exits 130.",
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
    // A topic bench named itself is its own to remove; a --topic one never is.
    const removeTopic = given === undefined && values.keep !== true;

    // On before the create, so a Ctrl-C during it still ends in the cleanup below.
    let interrupted = false;
    const onSigint = () => {
      // A second Ctrl-C does not wait for the in-flight batches.
      if (interrupted) process.exit(interruptedExitCode);
      interrupted = true;
      if (!io.json)
        io.err("\nbench: interrupted, finishing the messages already sent (Ctrl-C again to quit)\n");
    };
    process.on("SIGINT", onSigint);
    try {
      await client.topics.create(topic, { partitions });
    } catch (e) {
      if (!(e instanceof TopicExistsError && given !== undefined)) {
        process.off("SIGINT", onSigint);
        throw e;
      }
    }

    const payload = randomBytes(Math.ceil(size / 2))
      .toString("hex")
      .slice(0, size);
    const latencies = new Float64Array(messages).fill(Number.NaN);
    let next = 0;
    let done = 0;
    let failed = 0;
    let firstError: unknown;
    const t0 = performance.now();
    const tty = process.stderr.isTTY === true && !io.json;
    const progress = () => {
      const p = { done, total: messages, elapsedSeconds: (performance.now() - t0) / 1000 };
      if (tty) process.stderr.write(`\r${progressBar(p)}`);
      else if (!io.json) io.err(progressLine(p));
    };
    const timer = setInterval(progress, tty ? ttyRedrawMs : logLineMs);

    const worker = async () => {
      const producer = client.producer(topic, {
        batchSize,
        lingerMs,
        maxBufferedRecords: Math.max(batchSize * 4, Math.ceil(20_000 / concurrency)),
      });
      const pending: Promise<void>[] = [];
      for (let i = next++; i < messages && !interrupted; i = next++) {
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
            },
          ),
        );
      }
      await producer.close().catch(() => {});
      await Promise.all(pending);
      return pending.length;
    };
    let sent = 0;
    try {
      const perWorker = await Promise.all(Array.from({ length: concurrency }, () => worker()));
      sent = perWorker.reduce((a, n) => a + n, 0);
    } finally {
      clearInterval(timer);
      process.off("SIGINT", onSigint);
    }
    const seconds = (performance.now() - t0) / 1000;
    if (tty) {
      progress();
      process.stderr.write("\n");
    }
    const summary = benchSummary({
      topic,
      messages,
      sent,
      acknowledged: done,
      failed,
      sizeBytes: size,
      concurrency,
      seconds,
      latenciesMs: latencies.filter((v) => !Number.isNaN(v)),
      interrupted,
    });
    if (removeTopic) await client.topics.delete(topic).catch(() => {});
    if (io.json) io.outJson(summary);
    else io.out(summaryText(summary));
    if (failed > 0) io.err(`narad: ${failed} messages failed; first: ${(firstError as Error).message}\n`);
    if (interrupted) return interruptedExitCode;
    return failed > 0 ? 1 : 0;
  },
};
