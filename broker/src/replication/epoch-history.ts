// The leader-epoch history of one partition replica: (epoch, start offset)
// pairs, the `leader-epochs` file of ADR 0007. Entry i says "records from
// startOffset up to the next entry's startOffset were written by the leader
// of epoch". Pure: the file's I/O lives with the log.

export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

/** Ascending in both epoch and startOffset. */
export type EpochHistory = readonly EpochEntry[];

/** No epoch at all (an empty log). */
export const NO_EPOCH = -1;

export function lastEpoch(h: EpochHistory): number {
  return h.length === 0 ? NO_EPOCH : (h[h.length - 1] as EpochEntry).epoch;
}

/**
 * Records that `epoch` starts at `startOffset` (a new leader, or a follower
 * seeing the first record of a new epoch). An epoch that wrote nothing is
 * replaced by the next one at the same offset, so every kept entry covers
 * at least one record or is the last.
 */
export function startEpoch(h: EpochHistory, epoch: number, startOffset: number): EpochHistory {
  const last = h[h.length - 1];
  if (last === undefined) return [{ epoch, startOffset }];
  if (epoch < last.epoch) throw new Error(`epoch ${epoch} is older than the last one, ${last.epoch}`);
  if (startOffset < last.startOffset)
    throw new Error(
      `epoch ${epoch} starts at ${startOffset}, before epoch ${last.epoch} (${last.startOffset})`,
    );
  if (epoch === last.epoch) return h;
  if (startOffset === last.startOffset) return [...h.slice(0, -1), { epoch, startOffset }];
  return [...h, { epoch, startOffset }];
}

/** The epoch that wrote `offset`, or NO_EPOCH when it precedes the history. */
export function epochAt(h: EpochHistory, offset: number): number {
  let e = NO_EPOCH;
  for (const x of h) if (x.startOffset <= offset) e = x.epoch;
  return e;
}

export interface EpochEnd {
  /** The largest epoch ≤ the one asked for that this history knows; NO_EPOCH if none. */
  epoch: number;
  /** The first offset not written by that epoch (the next epoch's start, or the log end). */
  endOffset: number;
}

/**
 * OffsetForLeaderEpoch as the leader answers it: where `requested` (or the
 * largest older epoch it knows) ends in this log. A follower whose last
 * epoch is `requested` holds nothing the leader agrees with above this.
 */
export function offsetForLeaderEpoch(h: EpochHistory, logEnd: number, requested: number): EpochEnd {
  let idx = -1;
  for (let i = 0; i < h.length; i++) if ((h[i] as EpochEntry).epoch <= requested) idx = i;
  if (idx < 0) return { epoch: NO_EPOCH, endOffset: h[0]?.startOffset ?? logEnd };
  const next = h[idx + 1];
  return { epoch: (h[idx] as EpochEntry).epoch, endOffset: next === undefined ? logEnd : next.startOffset };
}

/** The history after the log is truncated to `logEnd` (entries starting at or above it go). */
export function truncateHistory(h: EpochHistory, logEnd: number): EpochHistory {
  return h.filter((x) => x.startOffset < logEnd);
}
