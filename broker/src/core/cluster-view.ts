// The cluster API's reads (GET /v1/cluster/members, /moves),
// pure: from the metastore's members, topics, owners and moves in flight to
// Narad (Go)'s shapes (a decommission request's answer: core/decommission.ts).

import type { ClusterMove, Member, MemberState } from "../meta/types.ts";

/** Narad's member view, plus `state`: this broker's full lifecycle state. */
export interface MemberView {
  id: string;
  addr: string;
  /** Narad's two states: "dead" when the member is Down, else "alive". */
  status: "alive" | "dead";
  state: MemberState;
  draining: boolean;
  owned_partitions: number;
  outbound_moves: number;
}

export interface TopicPlacement {
  name: string;
  partitions: number;
}

/** Members sorted by id, each with the partitions it owns and the moves leaving it. Removed members are gone. */
export function memberViews(
  members: readonly Member[],
  topics: readonly TopicPlacement[],
  ownerOf: (topic: string, partition: number) => string,
  moves: readonly ClusterMove[],
): MemberView[] {
  const owned = new Map<string, number>();
  for (const t of topics) {
    for (let p = 0; p < t.partitions; p++) {
      const owner = ownerOf(t.name, p);
      owned.set(owner, (owned.get(owner) ?? 0) + 1);
    }
  }
  const outbound = new Map<string, number>();
  for (const m of moves) outbound.set(m.from, (outbound.get(m.from) ?? 0) + 1);
  return members
    .filter((m) => m.state !== "Removed")
    .map((m) => ({
      id: m.id,
      addr: m.address,
      status: m.state === "Down" ? ("dead" as const) : ("alive" as const),
      state: m.state,
      draining: m.state === "Decommissioning",
      owned_partitions: owned.get(m.id) ?? 0,
      outbound_moves: outbound.get(m.id) ?? 0,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Moves sorted by topic, then partition, as Narad lists them. */
export function sortedMoves(moves: readonly ClusterMove[]): ClusterMove[] {
  return [...moves].sort((a, b) =>
    a.topic !== b.topic ? (a.topic < b.topic ? -1 : 1) : a.partition - b.partition,
  );
}
