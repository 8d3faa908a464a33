// `narad group ls | describe | rm`: consumer groups of a topic.

import type { GroupInfo } from "../../../../client/index.ts";
import type { Command, CommandGroup } from "../args.ts";
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

export const group: CommandGroup = {
  summary: "consumer groups: lag, in flight, per partition; rm forgets one",
  commands: { ls, describe, rm },
};
