// The commands but bench: topic *, pub, sub, replay, cluster status, context *.

import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { buffer } from "node:stream/consumers";
import type { GroupInfo, Message, ReceivedMessage, TopicInfo, TopicSettings } from "../../../client/index.ts";
import { type Command, type Io, intOption, type Options, UsageError, type Values } from "./args.ts";
import { type Context, loadContexts, saveContexts } from "./contexts.ts";
import { bytes, duration, payloadText, table } from "./format.ts";

function positionals(args: string[], names: string[], optional: string[] = []): string[] {
  if (args.length < names.length) throw new UsageError(`missing <${names[args.length]}>`);
  if (args.length > names.length + optional.length)
    throw new UsageError(`unexpected argument "${args[names.length + optional.length]}"`);
  return args;
}

const settingOptions: Options = {
  partitions: { type: "string" },
  "retention-ms": { type: "string" },
  "retention-bytes": { type: "string" },
  "max-in-flight": { type: "string" },
  "max-acked-ahead": { type: "string" },
};

function settings(values: Values): TopicSettings {
  const s: TopicSettings = {};
  const set = <K extends keyof TopicSettings>(k: K, flag: string, min: number) => {
    const v = intOption(values, flag, min);
    if (v !== undefined) s[k] = v;
  };
  set("partitions", "partitions", 1);
  set("retentionMs", "retention-ms", 0);
  set("retentionBytes", "retention-bytes", 0);
  set("visibilityTimeoutMs", "visibility-timeout-ms", 1);
  set("maxInFlightPerPartition", "max-in-flight", 1);
  set("maxAckedAheadPerPartition", "max-acked-ahead", 1);
  return s;
}

function messageLine(m: Message): string {
  return `${m.topic}/${m.partition}@${m.offset}  key=${m.key}  ${payloadText(m.payload)}\n`;
}

function messageJson(m: Message | ReceivedMessage): string {
  const { topic, partition, offset, key, timestampMs, payload } = m;
  const handle = "receiptHandle" in m ? { receipt_handle: m.receiptHandle } : {};
  const body = Buffer.isBuffer(payload)
    ? { payload: payload.toString("base64"), payload_encoding: "base64" }
    : { payload };
  return `${JSON.stringify({ topic, partition, offset, key, timestamp_ms: timestampMs, ...handle, ...body })}\n`;
}

function topicInfoText(t: TopicInfo, groups: Array<{ name: string; lag: number }>): string {
  let s = table(
    ["", ""],
    [
      ["topic", t.name],
      ["partitions", t.partitions],
      [
        "retention",
        `${duration(t.retentionMs)}, ${t.retentionBytes === 0 ? "no size cap" : bytes(t.retentionBytes)}`,
      ],
      ["visibility timeout", duration(t.visibilityTimeoutMs)],
      [
        "max in flight / acked ahead",
        `${t.maxInFlightPerPartition} / ${t.maxAckedAheadPerPartition} per partition`,
      ],
      ["created", t.createdAt],
    ],
  )
    .split("\n")
    .slice(1)
    .join("\n");
  s += `\n${table(
    ["PARTITION", "OWNER", "OLDEST", "HWM", "SEGMENTS", "SIZE"],
    t.partitionStats.map((p) => [
      p.index,
      p.ownerNode ?? "-",
      p.oldestOffset,
      p.highWatermark,
      p.segments,
      bytes(p.sizeBytes),
    ]),
  )}`;
  if (groups.length > 0)
    s += `\n${table(
      ["GROUP", "LAG"],
      groups.map((g) => [g.name, g.lag]),
    )}`;
  return s;
}

const topicAdd: Command = {
  options: { ...settingOptions, "visibility-timeout-ms": { type: "string" } },
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    const t = await io.client().topics.create(name as string, settings(values));
    io.out(io.json ? `${JSON.stringify(t)}\n` : `created topic ${t.name} (${t.partitions} partitions)\n`);
    return 0;
  },
};

const topicLs: Command = {
  options: {},
  async run(_values, args, io) {
    positionals(args, []);
    const topics = await io.client().topics.list();
    if (io.json) io.out(`${JSON.stringify(topics)}\n`);
    else if (topics.length === 0) io.out("no topics (create one: narad topic add <name>)\n");
    else
      io.out(
        table(
          ["NAME", "PARTITIONS", "RETENTION", "VISIBILITY", "CREATED"],
          topics.map((t) => [
            t.name,
            t.partitions,
            duration(t.retentionMs),
            duration(t.visibilityTimeoutMs),
            t.createdAt,
          ]),
        ),
      );
    return 0;
  },
};

const topicInfo: Command = {
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const client = io.client();
    const [t, groups] = await Promise.all([
      client.topics.get(name as string),
      client.topics.groups(name as string),
    ]);
    io.out(io.json ? `${JSON.stringify({ ...t, groups })}\n` : topicInfoText(t, groups));
    return 0;
  },
};

const topicEdit: Command = {
  options: settingOptions,
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    const patch = settings(values);
    if (Object.keys(patch).length === 0)
      throw new UsageError(
        "nothing to change: give --partitions, --retention-ms, --retention-bytes, --max-in-flight or --max-acked-ahead",
      );
    const t = await io.client().topics.update(name as string, patch);
    io.out(io.json ? `${JSON.stringify(t)}\n` : `updated topic ${t.name}\n`);
    return 0;
  },
};

const topicRm: Command = {
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    await io.client().topics.delete(name as string);
    io.out(io.json ? `${JSON.stringify({ deleted: name })}\n` : `deleted topic ${name}\n`);
    return 0;
  },
};

const pub: Command = {
  options: { key: { type: "string" }, partition: { type: "string" }, file: { type: "string" } },
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
    io.out(
      io.json
        ? `${JSON.stringify({ topic, published: n })}\n`
        : `published ${n} message${n === 1 ? "" : "s"} to ${topic}\n`,
    );
    return 0;
  },
};

const sub: Command = {
  options: {
    group: { type: "string" },
    peek: { type: "boolean" },
    count: { type: "string" },
    "idle-ms": { type: "string" },
    "wait-ms": { type: "string" },
    partition: { type: "string" },
  },
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

const replay: Command = {
  options: { partition: { type: "string" }, offset: { type: "string" }, limit: { type: "string" } },
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

const clusterStatus: Command = {
  options: {},
  async run(_values, args, io) {
    positionals(args, []);
    const client = io.client();
    const rows = await Promise.all(
      io.urls().map(async (url) => {
        try {
          const s = await client.status(url);
          const state = s.wal.poisoned
            ? "wal-failed"
            : s.draining
              ? "draining"
              : s.ready
                ? "ready"
                : "not-ready";
          return {
            url,
            nodeId: s.nodeId,
            state,
            walPending: s.wal.pendingRecords,
            status: s,
            error: undefined,
          };
        } catch (e) {
          return {
            url,
            nodeId: undefined,
            state: "unreachable",
            walPending: undefined,
            status: undefined,
            error: (e as Error).message,
          };
        }
      }),
    );
    if (io.json) io.out(`${JSON.stringify({ brokers: rows })}\n`);
    else
      io.out(
        table(
          ["URL", "NODE", "STATE", "WAL PENDING", "CORRUPT FRAMES", "ERROR"],
          rows.map((r) => [
            r.url,
            r.nodeId ?? "-",
            r.state,
            r.walPending ?? "-",
            r.status?.wal.corruptFrames ?? "-",
            r.error ?? "",
          ]),
        ),
      );
    return rows.some((r) => r.state === "unreachable") ? 1 : 0;
  },
};

function contextOut(io: Io, text: string, json: unknown): void {
  io.out(io.json ? `${JSON.stringify(json)}\n` : text);
}

const contextAdd: Command = {
  options: {},
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name as string))
      throw new UsageError(`invalid context name "${name}"`);
    const urls = ((values.url as string[] | undefined) ?? [])
      .flatMap((u) => u.split(","))
      .map((u) => u.trim())
      .filter((u) => u !== "");
    if (urls.length === 0) throw new UsageError("context add needs --url http://HOST:PORT (repeatable)");
    for (const u of urls)
      if (!/^https?:\/\/[^/]+/.test(u)) throw new UsageError(`--url must be http(s)://HOST:PORT, got "${u}"`);
    const file = loadContexts(io.env);
    const ctx: Context = { urls };
    if (typeof values.token === "string") ctx.token = values.token;
    if (typeof values.user === "string") {
      if (typeof values.password !== "string") throw new UsageError("--user needs --password");
      ctx.user = values.user;
      ctx.password = values.password;
    }
    if (typeof values.ca === "string") ctx.ca = resolve(values.ca);
    file.contexts[name as string] = ctx;
    file.current ??= name;
    saveContexts(io.env, file);
    contextOut(io, `context ${name}: ${urls.join(", ")}${file.current === name ? " (current)" : ""}\n`, {
      name,
      urls,
      current: file.current === name,
    });
    return 0;
  },
};

const contextUse: Command = {
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const file = loadContexts(io.env);
    if (file.contexts[name as string] === undefined)
      throw new UsageError(
        `no context "${name}"; add it with: narad context add ${name} --url http://HOST:7942`,
      );
    file.current = name;
    saveContexts(io.env, file);
    contextOut(io, `using context ${name}\n`, { current: name });
    return 0;
  },
};

const contextLs: Command = {
  options: {},
  async run(_values, args, io) {
    positionals(args, []);
    const file = loadContexts(io.env);
    const list = Object.entries(file.contexts).map(([name, c]) => ({
      name,
      urls: c.urls,
      current: name === file.current,
      // Never the secret itself; absent without credentials.
      ...(c.token !== undefined ? { auth: "token" } : c.user !== undefined ? { auth: `user ${c.user}` } : {}),
    }));
    if (io.json) io.out(`${JSON.stringify(list)}\n`);
    else if (list.length === 0)
      io.out("no contexts (add one: narad context add <name> --url http://HOST:7942)\n");
    else
      io.out(
        table(
          ["CURRENT", "NAME", "URLS", "AUTH"],
          list.map((c) => [c.current ? "*" : "", c.name, c.urls.join(","), c.auth ?? ""]),
        ),
      );
    return 0;
  },
};

const contextRm: Command = {
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const file = loadContexts(io.env);
    if (file.contexts[name as string] === undefined) throw new UsageError(`no context "${name}"`);
    delete file.contexts[name as string];
    if (file.current === name) file.current = undefined;
    saveContexts(io.env, file);
    contextOut(io, `removed context ${name}\n`, { removed: name });
    return 0;
  },
};

function groupTable(groups: GroupInfo[]): string {
  return table(
    ["GROUP", "LAG", "IN FLIGHT", "PARTITIONS"],
    groups.map((g) => [g.name, g.lag, g.partitions.reduce((a, p) => a + p.inFlight, 0), g.partitions.length]),
  );
}

const groupLs: Command = {
  options: {},
  async run(_values, args, io) {
    const [topic] = positionals(args, ["topic"]);
    const groups = await io.client().topics.groups(topic as string);
    if (io.json) io.out(`${JSON.stringify(groups)}\n`);
    else if (groups.length === 0) io.out(`no consumer groups on ${topic}\n`);
    else io.out(groupTable(groups));
    return 0;
  },
};

const groupDescribe: Command = {
  options: {},
  async run(_values, args, io) {
    const [topic, name] = positionals(args, ["topic", "group"]);
    const group = (await io.client().topics.groups(topic as string)).find((g) => g.name === name);
    if (group === undefined) {
      io.err(`narad: group "${name}" of topic "${topic}" not found\n`);
      return 1;
    }
    if (io.json) io.out(`${JSON.stringify(group)}\n`);
    else
      io.out(
        table(
          ["PARTITION", "COMMITTED", "IN FLIGHT", "ACKED AHEAD", "LAG"],
          group.partitions.map((p) => [p.partition, p.committed, p.inFlight, p.ackedAhead, p.lag]),
        ),
      );
    return 0;
  },
};

const groupRm: Command = {
  options: {},
  async run(_values, args, io) {
    const [topic, name] = positionals(args, ["topic", "group"]);
    await io.client().topics.deleteGroup(topic as string, name as string);
    io.out(io.json ? `${JSON.stringify({ deleted: name, topic })}\n` : `deleted group ${name} of ${topic}\n`);
    return 0;
  },
};

export const commands: Record<string, Command> = {
  "topic add": topicAdd,
  "topic ls": topicLs,
  "topic info": topicInfo,
  "topic edit": topicEdit,
  "topic rm": topicRm,
  "group ls": groupLs,
  "group describe": groupDescribe,
  "group rm": groupRm,
  pub,
  sub,
  replay,
  "cluster status": clusterStatus,
  "context add": contextAdd,
  "context use": contextUse,
  "context ls": contextLs,
  "context rm": contextRm,
};
