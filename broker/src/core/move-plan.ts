// Pure planning for partition moves (moves/): which byte ranges of the
// source's segments the destination still needs, in chunks, and when the
// catch-up copy should stop and freeze the source (narad-go's rule: copy in
// 1 MiB chunks until within 4 MiB of the source, at most 20 rounds, stop
// after 3 rounds without progress; the frozen finalize copies the rest).

/** A segment (named by its base offset) and its length in bytes. */
export interface Extent {
  base: number;
  bytes: number;
}

/** Bytes [position, position + length) of segment `base`. */
export interface Chunk {
  base: number;
  position: number;
  length: number;
}

export interface CopyPlan {
  /** Staged segments the source no longer has (retention removed them): delete. */
  remove: number[];
  /** Staged segments longer than the source's verified length: start them over (truncate to 0). */
  reset: number[];
  /** What to fetch, in segment order then position order, each at most chunkBytes. */
  fetch: Chunk[];
  /** Sum of the fetch lengths. */
  remainingBytes: number;
}

/**
 * What turns the staged copy into a byte-exact prefix-equal copy of
 * `source`. Verified bytes of a segment never change once written, so a
 * staged prefix is kept and only its tail fetched.
 */
export function planCopy(source: readonly Extent[], staged: readonly Extent[], chunkBytes: number): CopyPlan {
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes <= 0) throw new RangeError("planCopy: bad chunkBytes");
  const have = new Map<number, number>();
  for (const s of staged) have.set(s.base, s.bytes);
  const wanted = new Set(source.map((s) => s.base));
  const remove = staged.filter((s) => !wanted.has(s.base)).map((s) => s.base);
  const reset: number[] = [];
  const fetch: Chunk[] = [];
  let remainingBytes = 0;
  for (const seg of source) {
    let from = have.get(seg.base) ?? 0;
    if (from > seg.bytes) {
      reset.push(seg.base);
      from = 0;
    }
    for (let pos = from; pos < seg.bytes; pos += chunkBytes) {
      const length = Math.min(chunkBytes, seg.bytes - pos);
      fetch.push({ base: seg.base, position: pos, length });
      remainingBytes += length;
    }
  }
  return { remove, reset, fetch, remainingBytes };
}

/** Whether the staged copy equals the source exactly (same segments, same lengths). */
export function copyComplete(source: readonly Extent[], staged: readonly Extent[]): boolean {
  if (source.length !== staged.length) return false;
  const have = new Map(staged.map((s) => [s.base, s.bytes]));
  return source.every((s) => have.get(s.base) === s.bytes);
}

export interface CatchUpLimits {
  /** Freeze once the source is at most this many bytes ahead (4 MiB). */
  closeEnoughBytes: number;
  /** Freeze after this many rounds whatever the distance (20). */
  maxRounds: number;
  /** Freeze after this many rounds in a row that did not shrink the distance (3). */
  maxStalledRounds: number;
}

export interface CatchUpProgress {
  rounds: number;
  stalledRounds: number;
  /** Distance (bytes behind the source) seen at the start of the last round. */
  lastRemaining: number | undefined;
}

export const freshCatchUp: CatchUpProgress = { rounds: 0, stalledRounds: 0, lastRemaining: undefined };

/**
 * Called at the start of a round with the bytes still to copy: whether to
 * copy another round or freeze the source now, and the updated progress.
 */
export function catchUpStep(
  p: CatchUpProgress,
  remaining: number,
  limits: CatchUpLimits,
): { action: "copy" | "freeze"; progress: CatchUpProgress } {
  const stalled = p.lastRemaining !== undefined && remaining >= p.lastRemaining ? p.stalledRounds + 1 : 0;
  const progress = { rounds: p.rounds, stalledRounds: stalled, lastRemaining: remaining };
  if (remaining <= limits.closeEnoughBytes) return { action: "freeze", progress };
  if (p.rounds >= limits.maxRounds || stalled >= limits.maxStalledRounds)
    return { action: "freeze", progress };
  return { action: "copy", progress: { ...progress, rounds: p.rounds + 1 } };
}
