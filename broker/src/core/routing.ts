// Owner routing (ARCHITECTURE.md §3, §5), pure: given the local replica's
// owner of a partition and the member list, decide where a read goes
// (local | forward to a peer | unavailable with a retry hint) and what the
// dispatcher's Destination is. No I/O: rpc/ and dispatch/ act on the answer.

import type { Destination, MemberState } from "./dispatch-plan.ts";

/** The part of a metastore Member routing needs (meta/types.ts Member satisfies it). */
export interface MemberView {
  id: string;
  /** host:httpPort */
  address: string;
  /** host:clusterPort; when absent, the host of `address` and its port + 1 (7942 → 7943). */
  clusterAddress?: string | undefined;
  state: MemberState;
}

export type ReadRoute =
  | { kind: "local" }
  | { kind: "forward"; nodeId: string; address: string; state: MemberState }
  | { kind: "unavailable"; reason: string; retryAfterSeconds: number };

/**
 * Where a peer's cluster RPC listens: its explicit clusterAddress, else the
 * convention "same host, HTTP port + 1" (the operator's 7942/7943). Undefined
 * when neither gives a usable host:port.
 */
export function clusterAddressOf(m: Pick<MemberView, "address" | "clusterAddress">): string | undefined {
  if (m.clusterAddress !== undefined && m.clusterAddress !== "") return m.clusterAddress;
  const i = m.address.lastIndexOf(":");
  if (i <= 0) return undefined;
  const port = Number(m.address.slice(i + 1));
  if (!Number.isInteger(port) || port <= 0 || port >= 65535) return undefined;
  return `${m.address.slice(0, i)}:${port + 1}`;
}

function findMember(members: readonly MemberView[], id: string): MemberView | undefined {
  for (const m of members) if (m.id === id) return m;
  return undefined;
}

/**
 * Read routing. My own partitions are read locally whatever membership says
 * (the log is on my volume). A peer owner is forwarded to while it may be up
 * (Active, Joining, Maintenance — a draining owner still serves reads —,
 * Decommissioning); Down/Removed, an unknown member or no address is
 * unavailable: the client retries (503 + Retry-After), it never gets 421.
 */
export function routeRead(
  localNodeId: string,
  ownerId: string,
  members: readonly MemberView[],
  retryAfterSeconds: number,
): ReadRoute {
  if (ownerId === localNodeId) return { kind: "local" };
  if (ownerId === "") return { kind: "unavailable", reason: "partition has no owner yet", retryAfterSeconds };
  const m = findMember(members, ownerId);
  if (m === undefined)
    return { kind: "unavailable", reason: `owner ${ownerId} is not a known member`, retryAfterSeconds };
  if (m.state === "Down" || m.state === "Removed")
    return { kind: "unavailable", reason: `owner ${ownerId} is ${m.state}`, retryAfterSeconds };
  const address = clusterAddressOf(m);
  if (address === undefined)
    return { kind: "unavailable", reason: `owner ${ownerId} has no cluster address`, retryAfterSeconds };
  return { kind: "forward", nodeId: m.id, address, state: m.state };
}

/**
 * The dispatcher's view of an owner. An owner missing from the member list
 * (assignment seen before membership, a replica mid-update) is reported as
 * Maintenance so its records are held, never scattered on partial knowledge.
 * An owner id of "" (unassigned) is held the same way.
 */
export function destinationOf(
  localNodeId: string,
  ownerId: string,
  members: readonly MemberView[],
): Destination {
  const m = ownerId === "" ? undefined : findMember(members, ownerId);
  // Local partitions are committed whatever the state (decideLane); an
  // unlisted self is taken as Active (a single node, a replica not yet fed).
  if (ownerId === localNodeId) return { kind: "owner", nodeId: ownerId, state: m?.state ?? "Active" };
  return { kind: "owner", nodeId: ownerId, state: m?.state ?? "Maintenance" };
}

/** The cluster address of a peer the dispatcher commits to, or why there is none. */
export function commitAddress(
  ownerId: string,
  members: readonly MemberView[],
): { ok: true; address: string } | { ok: false; reason: string } {
  const m = findMember(members, ownerId);
  if (m === undefined) return { ok: false, reason: `owner ${ownerId} is not a known member` };
  const address = clusterAddressOf(m);
  if (address === undefined) return { ok: false, reason: `owner ${ownerId} has no cluster address` };
  return { ok: true, address };
}

/** A peer-owned partition a queue consume may probe, and where its owner listens. */
export interface RemoteProbe {
  partition: number;
  nodeId: string;
  address: string;
}

/**
 * Queue consume without a partition (Narad v1 order): the partitions I own
 * (tried first, then long-polled locally) and the peers' partitions worth a
 * non-blocking probe — those routeRead would forward to (Down/Removed,
 * unknown, unassigned owners are skipped). The probe list starts at
 * partition `start % owners.length` and wraps, so consumers spread over peers.
 */
export function queueConsumePlan(
  localNodeId: string,
  owners: readonly string[],
  members: readonly MemberView[],
  start: number,
): { local: number[]; remote: RemoteProbe[] } {
  const local: number[] = [];
  const remote: RemoteProbe[] = [];
  const n = owners.length;
  for (let i = 0; i < n; i++) {
    const p = ((((start % n) + n) % n) + i) % n;
    const r = routeRead(localNodeId, owners[p] ?? "", members, 0);
    if (r.kind === "local") local.push(p);
    else if (r.kind === "forward") remote.push({ partition: p, nodeId: r.nodeId, address: r.address });
  }
  local.sort((a, b) => a - b);
  return { local, remote };
}
