import type { PartitionAssignment } from "../../../packages/api/src/v1alpha1/types.ts";

// Partition placement for one topic. Properties (tested):
// - sticky: a partition keeps its owner while that owner is still a member
//   (any state but Removed: a Down owner keeps its partitions, brokers
//   reroute records around it; moving data is a decommission's job);
// - balanced: unplaced partitions go to the Active member owning the fewest
//   partitions of this topic;
// - deterministic: ties break in member order rotated by a hash of the
//   topic name, so topics do not all pile partition 0 onto the same member;
// - fan-out children (avoid): an unplaced partition goes to another Active
//   member than the owner of the parent's matching partition when there is
//   one (Narad places a child away from its parent). Placed ones stay.

export interface AssignmentInput {
  topic: string;
  partitions: number;
  previous: readonly PartitionAssignment[];
  /** Members that may keep partitions (every state but Removed). */
  memberIds: readonly string[];
  /** Members that may receive new partitions. */
  activeIds: readonly string[];
  /** partition → a member it should not be placed on, when another can take it (a fan-out child's parent owner). */
  avoid?: ReadonlyMap<number, string>;
}

export type AssignmentResult =
  | { ok: true; assignments: PartitionAssignment[]; changed: boolean; placed: number }
  /** Some partition has no owner and no Active member can take it. */
  | { ok: false; reason: string };

export function assignPartitions(input: AssignmentInput): AssignmentResult {
  const members = new Set(input.memberIds);
  const kept = new Map<number, string>();
  for (const a of input.previous) {
    if (
      a.partition >= 0 &&
      a.partition < input.partitions &&
      members.has(a.owner) &&
      !kept.has(a.partition)
    ) {
      kept.set(a.partition, a.owner);
    }
  }
  const unplaced: number[] = [];
  for (let p = 0; p < input.partitions; p++) if (!kept.has(p)) unplaced.push(p);
  if (unplaced.length > 0 && input.activeIds.length === 0) {
    return { ok: false, reason: `${unplaced.length} partition(s) need an owner and no member is Active` };
  }

  const order = rotate(sortIds(input.activeIds), fnv1a(input.topic));
  const load = new Map<string, number>(order.map((id) => [id, 0]));
  for (const owner of kept.values()) if (load.has(owner)) load.set(owner, (load.get(owner) ?? 0) + 1);
  for (const p of unplaced) {
    const avoid = input.avoid?.get(p);
    const candidates = order.some((id) => id !== avoid) ? order.filter((id) => id !== avoid) : order;
    let best = candidates[0] as string;
    for (const id of candidates) if ((load.get(id) ?? 0) < (load.get(best) ?? 0)) best = id;
    kept.set(p, best);
    load.set(best, (load.get(best) ?? 0) + 1);
  }

  const assignments = [...kept.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([partition, owner]) => ({ partition, owner }));
  return {
    ok: true,
    assignments,
    changed: !sameAssignments(input.previous, assignments),
    placed: unplaced.length,
  };
}

export function sameAssignments(
  a: readonly PartitionAssignment[],
  b: readonly PartitionAssignment[],
): boolean {
  if (a.length !== b.length) return false;
  const sa = [...a].sort((x, y) => x.partition - y.partition);
  const sb = [...b].sort((x, y) => x.partition - y.partition);
  return sa.every((x, i) => x.partition === sb[i]?.partition && x.owner === sb[i]?.owner);
}

/** Member ids in ordinal order when they end in -<n>, else lexicographic. */
export function sortIds(ids: readonly string[]): string[] {
  const ord = (id: string) => {
    const m = /-(\d+)$/.exec(id);
    return m ? Number(m[1]) : Number.POSITIVE_INFINITY;
  };
  return [...new Set(ids)].sort((a, b) => ord(a) - ord(b) || (a < b ? -1 : a > b ? 1 : 0));
}

export function rotate<T>(list: T[], by: number): T[] {
  if (list.length === 0) return list;
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/** 32-bit FNV-1a of the UTF-16 code units; only used for a stable tie-break offset. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
