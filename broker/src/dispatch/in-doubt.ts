// The dispatcher's in-doubt bookkeeping (dispatch-plan.ts I4), pure: which
// seqs of a partition had their last commit fail without an answer, since
// when, and what to forget after a pass. Doubts are keyed by (topic,
// partition), not by lane (which names the owner): a partition move swaps
// the owner, but the data moves with the partition, a doubted commit that
// did land included. Keyed by owner, the doubt was lost at the swap and the
// record was rerouted and stored twice (F3, found by sim/). in-doubt-holds.ts owns the dispatcher's InDoubtMarks and
// calls these with its clock; the simulation (sim/) calls the same functions,
// so it exercises exactly the rules production runs.

import { type SkipSet, skipHas } from "../core/dispatch-plan.ts";

/** doubtKey(topic, partition) → seq → when its commit there first failed without an answer. */
export type InDoubtMarks = Map<string, Map<number, number>>;

/** The key of a partition's doubts: whatever node owns it (a lane key names the owner, this does not). */
export function doubtKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

/** Marks seqs in doubt on a partition; a seq already marked keeps its first time (the hold runs from then). */
export function markInDoubt(
  marks: InDoubtMarks,
  topic: string,
  partition: number,
  seqs: readonly number[],
  nowMs: number,
): void {
  if (seqs.length === 0) return;
  const key = doubtKey(topic, partition);
  let m = marks.get(key);
  if (m === undefined) {
    m = new Map();
    marks.set(key, m);
  }
  for (const s of seqs) if (!m.has(s)) m.set(s, nowMs);
}

/** Whether a seq is still held in doubt on a partition: marked, and its hold has not run out. */
export function isInDoubt(
  marks: InDoubtMarks,
  topic: string,
  partition: number,
  seq: number,
  nowMs: number,
  holdMs: number,
): boolean {
  const since = marks.get(doubtKey(topic, partition))?.get(seq);
  return since !== undefined && nowMs - since < holdMs;
}

/** A partition's marked seqs (held or expired), e.g. to report reroutes of expired doubts. */
export function doubtsOf(
  marks: InDoubtMarks,
  topic: string,
  partition: number,
): ReadonlyMap<number, number> | undefined {
  return marks.get(doubtKey(topic, partition));
}

/**
 * Forgets seqs that are done (below the checkpoint or in the skip-set), and
 * nothing else. A partition missing from a pass is not evidence: a window that
 * shrank, the pass byte budget or the lookahead may simply not have reached
 * its records, which are still undone; forgetting them there reopened the
 * duplicate seam. A parked seq sits below the checkpoint without being done,
 * so `isParked` keeps its marks. The map stays bounded by the undone records.
 */
export function pruneInDoubt(
  marks: InDoubtMarks,
  done: SkipSet,
  checkpoint: number,
  isParked: (seq: number) => boolean = () => false,
): void {
  if (marks.size === 0) return;
  for (const [key, m] of marks) {
    for (const s of m.keys()) if ((s < checkpoint || skipHas(done, s)) && !isParked(s)) m.delete(s);
    if (m.size === 0) marks.delete(key);
  }
}
