// `narad pub`, `narad sub`, `narad replay`: messages in and out.

import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { buffer } from "node:stream/consumers";
import type { ReceivedMessage } from "../../../../client/index.ts";
import { type Command, intOption, UsageError } from "../args.ts";
import { messageLine } from "../format.ts";
import { messageJson } from "../json.ts";
import { positionals } from "./shared.ts";

export const pub: Command = {
  summary: "publish one message, or one per stdin line",
  args: ["<topic>", "[message]"],
  options: {
    key: { type: "string", value: "K", description: "message key (same key, same partition)" },
    partition: { type: "string", value: "N", description: "pin the partition" },
    file: {
      type: "string",
      value: "PATH",
      description: "one message of the file's bytes as they are (- for all of stdin)",
    },
  },
  notes: "Without a message or --file, each non-empty stdin line is one message (batched).",
  async run(values, args, io) {
    const [topic, message] = positionals(args, ["topic"], ["message"]);
    const key = values.key as string | undefined;
    const partition = intOption(values, "partition", 0);
    const file = values.file as string | undefined;
    const opts = { ...(key === undefined ? {} : { key }), ...(partition === undefined ? {} : { partition }) };
    let n = 0;
    if (file !== undefined) {
      if (message !== undefined) throw new UsageError("give a message or --file, not both");
      // One message of exactly the file's bytes (or stdin's with "-"): no
      // line splitting, no text decoding, so binary payloads stay intact.
      const payload = file === "-" ? await buffer(process.stdin) : await readFile(file);
      await io.client().produce(topic as string, payload, opts);
      n = 1;
    } else if (message !== undefined) {
      await io.client().produce(topic as string, message, opts);
      n = 1;
    } else {
      if (process.stdin.isTTY) io.err("reading messages from stdin, one per line (Ctrl-D to end)\n");
      const producer = io.client().producer(topic as string, { lingerMs: 5 });
      const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
      for await (const line of lines) {
        if (line === "") continue;
        await producer.send(line, opts);
        n++;
      }
      await producer.close();
    }
    if (io.json) io.outJson({ topic, published: n });
    else io.out(`published ${n} message${n === 1 ? "" : "s"} to ${topic}\n`);
    return 0;
  },
};

export const sub: Command = {
  summary: "consume and ack after printing; --peek nacks instead (nothing acked)",
  args: ["<topic>"],
  options: {
    group: { type: "string", value: "G", description: "consumer group (default: default)" },
    peek: { type: "boolean", description: "hold the leases, then nack them all: nothing is acked" },
    count: { type: "string", value: "N", description: "stop after N messages" },
    "idle-ms": { type: "string", value: "N", description: "stop after N ms without a message" },
    "wait-ms": { type: "string", value: "N", description: "long-poll wait per consume (default 5000)" },
    partition: { type: "string", value: "N", description: "consume one partition only" },
  },
  notes: "Ctrl-C stops it. --json prints one message per line (NDJSON).",
  async run(values, args, io) {
    const [topic] = positionals(args, ["topic"]);
    const peek = values.peek === true;
    const count = intOption(values, "count", 1);
    const idleMs = intOption(values, "idle-ms", 1);
    const partition = intOption(values, "partition", 0);
    const waitMs = Math.min(
      intOption(values, "wait-ms", 1, 5000) as number,
      idleMs ?? Number.POSITIVE_INFINITY,
      10_000,
    );
    const consumer = io.client().consumer(topic as string, {
      ...(values.group === undefined ? {} : { group: values.group as string }),
      ...(partition === undefined ? {} : { partition }),
      waitMs,
      onError: (e) => io.err(`narad: ${(e as Error).message} (retrying)\n`),
    });
    const onSignal = () => consumer.stop();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    // Peek holds every lease until the end, so each consume returns another message; then gives all back.
    const held: ReceivedMessage[] = [];
    let n = 0;
    let lastAt = Date.now();
    try {
      while (!consumer.stopped && (count === undefined || n < count)) {
        if (idleMs !== undefined && Date.now() - lastAt >= idleMs) break;
        const msg = await consumer.poll();
        if (msg === undefined) continue;
        lastAt = Date.now();
        n++;
        io.out(io.json ? messageJson(msg) : messageLine(msg));
        if (peek) held.push(msg);
        else await msg.ack();
      }
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      consumer.stop();
      await Promise.allSettled(held.map((m) => m.nack()));
    }
    if (!io.json)
      io.err(`${n} message${n === 1 ? "" : "s"} ${peek ? "peeked (not acked)" : "consumed and acked"}\n`);
    return 0;
  },
};

export const replay: Command = {
  summary: "read stored messages from an offset (no consumer state)",
  args: ["<topic>"],
  options: {
    partition: { type: "string", value: "N", description: "the partition (required)" },
    offset: { type: "string", value: "N", description: "first offset (default 0)" },
    limit: { type: "string", value: "N", description: "most messages (default 100)" },
  },
  notes: "--json prints one message per line (NDJSON).",
  async run(values, args, io) {
    const [topic] = positionals(args, ["topic"]);
    const partition = intOption(values, "partition", 0);
    if (partition === undefined) throw new UsageError("replay needs --partition N");
    let offset = intOption(values, "offset", 0, 0) as number;
    let left = intOption(values, "limit", 1, 100) as number;
    const client = io.client();
    let n = 0;
    while (left > 0) {
      const page = await client.read(topic as string, partition, offset, Math.min(left, 1000));
      for (const m of page.records) io.out(io.json ? messageJson(m) : messageLine(m));
      n += page.records.length;
      left -= page.records.length;
      if (page.records.length === 0 || page.nextOffset >= page.highWatermark) break;
      offset = page.nextOffset;
    }
    if (!io.json && n === 0) io.err(`no messages in ${topic}/${partition} from offset ${offset}\n`);
    return 0;
  },
};
