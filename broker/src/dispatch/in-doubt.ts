// The dispatcher's in-doubt bookkeeping (dispatch-plan.ts I4), pure: which
// seqs of a lane had their last commit fail without an answer, since when,
// and what to forget after a pass. dispatcher.ts owns one InDoubtMarks and
// calls these with its clock; the simulation (sim/) calls the same functions,
// so it exercises exactly the rules production runs.

import { type SkipSet, skipHas } from "../core/dispatch-plan.ts";

/** Lane key → seq → when its commit on that lane first failed without an answer. */
export type InDoubtMarks = Map<string, Map<number, number>>;

/** Marks seqs in doubt on a lane; a seq already marked keeps its first time (the hold runs from then). */
export function markInDoubt(marks: InDoubtMarks, lane: string, seqs: readonly number[], nowMs: number): void {
  if (seqs.length === 0) return;
  let m = marks.get(lane);
  if (m === undefined) {
    m = new Map();
    marks.set(lane, m);
  }
  for (const s of seqs) if (!m.has(s)) m.set(s, nowMs);
}

/** Whether a seq is still held in doubt on a lane: marked, and its hold has not run out. */
export function isInDoubt(
  marks: InDoubtMarks,
  lane: string,
  seq: number,
  nowMs: number,
  holdMs: number,
): boolean {
  const since = marks.get(lane)?.get(seq);
  return since !== undefined && nowMs - since < holdMs;
}

/**
 * Forgets seqs that are done (below the checkpoint or in the skip-set), and
 * nothing else. A lane missing from a pass is not evidence: a window that
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
  for (const [lane, m] of marks) {
    for (const s of m.keys()) if ((s < checkpoint || skipHas(done, s)) && !isParked(s)) m.delete(s);
    if (m.size === 0) marks.delete(lane);
  }
}
