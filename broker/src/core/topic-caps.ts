// Caps on how many topics and partitions a cluster holds, pure. Every
// partition costs directories, fds when open and memory; without a cap any
// user with a create grant could make enough of them to wedge a node
// (150 topics x 108 partitions ran it out of descriptors). A refusal is a
// 409 naming the setting to raise.

import { conflict, type NaradError } from "../errors.ts";

export interface TopicCaps {
  maxTopics: number;
  maxPartitions: number;
}

/** Why adding `addTopics` topics with `addPartitions` partitions in total is refused, or undefined. */
export function capRefusal(
  existing: readonly { partitions: number }[],
  addTopics: number,
  addPartitions: number,
  caps: TopicCaps,
): NaradError | undefined {
  if (addTopics > 0 && existing.length + addTopics > caps.maxTopics) {
    return conflict(
      `the cluster holds ${existing.length} topics, its limit (--max-topics ${caps.maxTopics}); delete one or raise the limit`,
    );
  }
  let total = 0;
  for (const t of existing) total += t.partitions;
  if (addPartitions > 0 && total + addPartitions > caps.maxPartitions) {
    return conflict(
      `${addPartitions} more partitions would make ${total + addPartitions}, above the limit (--max-partitions ${caps.maxPartitions})`,
    );
  }
  return undefined;
}
