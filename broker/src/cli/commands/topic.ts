// `narad topic add | ls | info | edit | rm`.

import type { TopicSettings } from "../../../../client/index.ts";
import {
  type Command,
  type CommandGroup,
  intOption,
  type Options,
  UsageError,
  type Values,
} from "../args.ts";
import { duration, table, topicInfoText } from "../format.ts";
import { positionals } from "./shared.ts";

const settingOptions: Options = {
  partitions: { type: "string", value: "N", description: "partitions (edit: increase only)" },
  "retention-ms": { type: "string", value: "N", description: "retention by age (0 = the broker's default)" },
  "retention-bytes": {
    type: "string",
    value: "N",
    description: "retention by size per partition (0 = no cap)",
  },
  "max-in-flight": { type: "string", value: "N", description: "leases per partition" },
  "max-acked-ahead": {
    type: "string",
    value: "N",
    description: "acks parked past the frontier per partition",
  },
  "min-insync-replicas": {
    type: "string",
    value: "N",
    description: "copies an acks=all record needs (1 to the replication factor)",
  },
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
  set("replicationFactor", "replication-factor", 1);
  set("minInsyncReplicas", "min-insync-replicas", 1);
  return s;
}

const add: Command = {
  summary: "create a topic",
  args: ["<name>"],
  options: {
    ...settingOptions,
    "visibility-timeout-ms": { type: "string", value: "N", description: "lease length (fixed at creation)" },
    "replication-factor": {
      type: "string",
      value: "N",
      description:
        "copies of each partition, 1-5 (fixed at creation; needs the broker's --replication on above 1)",
    },
  },
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    const t = await io.client().topics.create(name as string, settings(values));
    if (io.json) io.outJson(t);
    else {
      const copies =
        t.replicationFactor > 1 ? `, ${t.replicationFactor} copies, min in-sync ${t.minInsyncReplicas}` : "";
      io.out(`created topic ${t.name} (${t.partitions} partitions${copies})\n`);
    }
    return 0;
  },
};

const ls: Command = {
  summary: "list topics",
  options: {},
  async run(_values, args, io) {
    positionals(args, []);
    const topics = await io.client().topics.list();
    if (io.json) io.outJson(topics);
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

const info: Command = {
  summary: "settings, partitions (owner or leader, replicas, offsets, size) and groups of a topic",
  args: ["<name>"],
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const client = io.client();
    const [t, groups] = await Promise.all([
      client.topics.get(name as string),
      client.topics.groups(name as string),
    ]);
    if (io.json) io.outJson({ ...t, groups });
    else io.out(topicInfoText(t, groups));
    return 0;
  },
};

const edit: Command = {
  summary: "change a topic's settings",
  args: ["<name>"],
  options: settingOptions,
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    const patch = settings(values);
    if (Object.keys(patch).length === 0)
      throw new UsageError(
        "nothing to change: give --partitions, --retention-ms, --retention-bytes, --max-in-flight, --max-acked-ahead or --min-insync-replicas",
      );
    const t = await io.client().topics.update(name as string, patch);
    if (io.json) io.outJson(t);
    else io.out(`updated topic ${t.name}\n`);
    return 0;
  },
};

const rm: Command = {
  summary: "delete a topic and its data",
  args: ["<name>"],
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    await io.client().topics.delete(name as string);
    if (io.json) io.outJson({ deleted: name });
    else io.out(`deleted topic ${name}\n`);
    return 0;
  },
};

export const topic: CommandGroup = {
  summary: "create, list, inspect, change and delete topics",
  commands: { add, ls, info, edit, rm },
};
