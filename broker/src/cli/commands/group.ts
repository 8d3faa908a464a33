// `narad group ls | describe | rm | seek`: consumer groups of a topic.

import type { GroupInfo, GroupSeekTarget } from "../../../../client/index.ts";
import { type Command, type CommandGroup, intOption, UsageError, type Values } from "../args.ts";
import { table } from "../format.ts";
import { positionals } from "./shared.ts";

function groupTable(groups: GroupInfo[]): string {
  return table(
    ["GROUP", "LAG", "IN FLIGHT", "PARTITIONS"],
    groups.map((g) => [g.name, g.lag, g.partitions.reduce((a, p) => a + p.inFlight, 0), g.partitions.length]),
  );
}

const ls: Command = {
  summary: "consumer groups of a topic: lag, in flight",
  args: ["<topic>"],
  options: {},
  async run(_values, args, io) {
    const [topic] = positionals(args, ["topic"]);
    const groups = await io.client().topics.groups(topic as string);
    if (io.json) io.outJson(groups);
    else if (groups.length === 0) io.out(`no consumer groups on ${topic}\n`);
    else io.out(groupTable(groups));
    return 0;
  },
};

const describe: Command = {
  summary: "one group per partition: committed, in flight, acked ahead, lag",
  args: ["<topic>", "<group>"],
  options: {},
  async run(_values, args, io) {
    const [topic, name] = positionals(args, ["topic", "group"]);
    const group = (await io.client().topics.groups(topic as string)).find((g) => g.name === name);
    if (group === undefined) {
      io.err(`narad: group "${name}" of topic "${topic}" not found\n`);
      return 1;
    }
    if (io.json) io.outJson(group);
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

const rm: Command = {
  summary: "forget a group (frontiers, leases, declaration)",
  args: ["<topic>", "<group>"],
  options: {},
  async run(_values, args, io) {
    const [topic, name] = positionals(args, ["topic", "group"]);
    await io.client().topics.deleteGroup(topic as string, name as string);
    if (io.json) io.outJson({ deleted: name, topic });
    else io.out(`deleted group ${name} of ${topic}\n`);
    return 0;
  },
};

/** The one target the flags name (exit 2 for none, several, or an offset without a partition). */
export function seekTarget(values: Values): GroupSeekTarget {
  const partition = intOption(values, "partition", 0);
  const offset = intOption(values, "to-offset", 0);
  const chosen = [values["to-earliest"] === true, values["to-latest"] === true, offset !== undefined];
  if (chosen.filter(Boolean).length !== 1)
    throw new UsageError("give exactly one of --to-earliest, --to-latest and --to-offset N");
  if (offset !== undefined) {
    if (partition === undefined)
      throw new UsageError("--to-offset needs --partition (an offset is a position in one partition)");
    return { offset, partition };
  }
  const to = values["to-earliest"] === true ? "earliest" : "latest";
  return partition === undefined ? { to } : { to, partition };
}

const seek: Command = {
  summary: "move a group's committed offset: replay from earliest, skip to latest, or an offset",
  args: ["<topic>", "<group>"],
  options: {
    "to-earliest": { type: "boolean", description: "the oldest record retention kept" },
    "to-latest": { type: "boolean", description: "the end: skip what is there now" },
    "to-offset": { type: "string", value: "N", description: "this offset (needs --partition)" },
    partition: { type: "string", value: "N", description: "only this partition (default: every partition)" },
  },
  notes: `
The broker writes the new offsets to disk before it answers. Leases of the
moved partitions are dropped: consumers holding them get 410 on ack, and
consumption resumes at the new offset. An unknown group is created.

Examples:
  narad group seek orders billing --to-earliest
  narad group seek orders billing --to-offset 120 --partition 3`,
  async run(values, args, io) {
    const [topic, name] = positionals(args, ["topic", "group"]);
    const target = seekTarget(values);
    const r = await io.client().topics.seekGroup(topic as string, name as string, target);
    if (io.json) io.outJson(r);
    else
      io.out(
        table(
          ["PARTITION", "PREVIOUS", "COMMITTED"],
          r.partitions.map((p) => [p.partition, p.previous, p.committed]),
        ),
      );
    return 0;
  },
};

export const group: CommandGroup = {
  summary: "consumer groups: lag, in flight, per partition; rm forgets one, seek moves its offset",
  commands: { ls, describe, rm, delete: { ...rm, summary: "same as rm" }, seek },
};
