// The cluster API's answers (GET /v1/cluster/members, /moves, decommission),
// pure: from the metastore's members, topics, owners and moves in flight to
// Narad (Go)'s shapes, and the decision a decommission request gets.

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

export type DecommissionDecision =
  /** Nothing to change: the answer is 204. */
  { kind: "noop" } | { kind: "refuse"; status: 404 | 409 | 501; error: string };

/**
 * What a decommission (or, with `cancel`, its cancellation) of member `id`
 * gets. On one node there is no other member to take its partitions, so a
 * decommission is refused and a cancellation has nothing to cancel. On
 * Kubernetes the operator decommissions the highest ordinal when the
 * NaradCluster is scaled down; it does not yet take a request for a given
 * member, so the request is refused and says how to do it.
 */
export function decideDecommission(
  mode: "single" | "kubernetes",
  members: readonly Member[],
  id: string,
  cancel: boolean,
): DecommissionDecision {
  const member = members.find((m) => m.id === id && m.state !== "Removed");
  if (member === undefined) return { kind: "refuse", status: 404, error: `member "${id}" not found` };
  if (mode === "single") {
    if (cancel) return { kind: "noop" };
    return {
      kind: "refuse",
      status: 409,
      error: `member "${id}" is this broker's only member: there is no other member to move its partitions to, so nothing to decommission`,
    };
  }
  return {
    kind: "refuse",
    status: 501,
    error:
      "decommissioning a chosen member is not carried out by the operator yet: scale the NaradCluster down " +
      "(kubectl scale naradcluster/<name> --replicas=N-1), which decommissions the highest ordinal, " +
      "moves its partitions and removes it; scaling back up cancels it",
  };
}
