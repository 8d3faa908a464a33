// The groups listing (GET /v1/topics/{t}/groups) assembled from what each
// partition's owner knows about that partition: pure, so one node and a
// cluster (where peers answer for their partitions over the GroupStats RPC)
// build the same answer.

import type { TopicConfig } from "../meta/types.ts";

export interface GroupPartitionInfo {
  partition: number;
  committed: number;
  in_flight: number;
  acked_ahead: number;
  lag: number;
}

export interface GroupInfo extends GroupSettings {
  name: string;
  lag: number;
  partitions: GroupPartitionInfo[];
}

/** A group's settings: its declared subscription's, each unset field (or an undeclared group) taking the topic's. */
export interface GroupSettings {
  declared: boolean;
  visibility_timeout_ms: number;
  max_in_flight_per_partition: number;
  max_acked_ahead_per_partition: number;
}

export function groupSettings(
  t: Pick<
    TopicConfig,
    | "subscriptions"
    | "visibility_timeout_ms"
    | "max_in_flight_per_partition"
    | "max_acked_ahead_per_partition"
  >,
  group: string,
): GroupSettings {
  const sub = t.subscriptions?.find((s) => s.name === group);
  return {
    declared: sub !== undefined,
    visibility_timeout_ms: sub?.visibility_timeout_ms ?? t.visibility_timeout_ms,
    max_in_flight_per_partition: sub?.max_in_flight_per_partition ?? t.max_in_flight_per_partition,
    max_acked_ahead_per_partition: sub?.max_acked_ahead_per_partition ?? t.max_acked_ahead_per_partition,
  };
}

/** One group's state in one partition, as its owner holds it. */
export interface PartitionGroupState {
  name: string;
  committed: number;
  in_flight: number;
  acked_ahead: number;
}

/** Every group with state (open queue or frontier file) in one partition, with its high watermark. */
export interface PartitionGroups {
  partition: number;
  highWatermark: number;
  groups: PartitionGroupState[];
}

/**
 * Groups are the declared subscriptions and every group some partition has
 * state for. A group without state in a partition is at offset 0 there
 * (what its queue opens at), so its lag is the whole partition.
 */
export function mergeGroups(topic: TopicConfig, parts: readonly PartitionGroups[]): GroupInfo[] {
  const names = new Set<string>((topic.subscriptions ?? []).map((s) => s.name));
  for (const p of parts) for (const g of p.groups) names.add(g.name);
  const sorted = [...parts].sort((a, b) => a.partition - b.partition);
  return [...names].sort().map((name) => {
    const partitions: GroupPartitionInfo[] = sorted.map((p) => {
      const g = p.groups.find((x) => x.name === name);
      const committed = g?.committed ?? 0;
      return {
        partition: p.partition,
        committed,
        in_flight: g?.in_flight ?? 0,
        acked_ahead: g?.acked_ahead ?? 0,
        lag: Math.max(0, p.highWatermark - committed),
      };
    });
    return {
      name,
      ...groupSettings(topic, name),
      lag: partitions.reduce((a, p) => a + p.lag, 0),
      partitions,
    };
  });
}
