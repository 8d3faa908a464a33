import type { CommitRecord, StoredRecord } from "../core/records.ts";

export interface PartitionLogOptions {
  /** Directory of this partition: data/topics/<t>/pNNNNN */
  dir: string;
  segmentBytes: number;
  indexIntervalBytes: number;
  maxFrameBytes: number;
  /** Clock for commit timestamps and retention (injected for tests). */
  nowMs: () => number;
}

export interface PartitionStats {
  index: number;
  segments: number;
  oldestOffset: number;
  nextOffset: number;
  highWatermark: number;
  sizeBytes: number;
  /**
   * Commit time (ms) of the newest record in the oldest segment: when that
   * segment was last written, which is what retention by age compares.
   * Undefined while the oldest segment holds no record.
   */
  oldestSegmentAtMs?: number;
}

export interface CommitResult {
  /** Offset of the first appended record, or -1 when every record was a duplicate. */
  baseOffset: number;
  appended: number;
  /** Records dropped because (incarnation, seq) was already committed. */
  duplicates: number;
  /**
   * Records dropped because their producer epoch is below the producer's
   * current epoch at this partition (fenced zombies). Absent means 0.
   */
  fenced?: number;
  /** Records refused by the producer sequence check (gap, overlap, older seq, reused seq). Absent means 0. */
  outOfOrder?: number;
  /**
   * One entry per input record, in order: the record's offset (appended now,
   * or a duplicate's original offset), or a `commitOutcome` code. Absent from
   * owners that predate it.
   */
  outcomes?: number[];
}

/** Negative entries of CommitResult.outcomes. */
export const commitOutcome = {
  /** A duplicate whose original offset is no longer known. */
  duplicateUnknownOffset: -1,
  /** Refused: the producer epoch is fenced. */
  fenced: -2,
  /** Refused: out-of-order sequence. */
  outOfOrder: -3,
} as const;

/**
 * One topic-partition's log. Records become visible (readable) only when the
 * high-watermark passes them, which happens only after fsync and CRC read-back.
 */
export interface PartitionLog {
  /**
   * Appends records not already committed (by incarnation+seq), as one frame
   * (or several when large), fsyncs, reads the frames back and verifies their
   * CRC, then advances the HWM. Calls are serialised per partition.
   */
  commitDurable(records: readonly CommitRecord[]): Promise<CommitResult>;
  /** Records with offset >= fromOffset and below the HWM. Empty at the HWM. */
  read(fromOffset: number, maxRecords: number, maxBytes: number): Promise<StoredRecord[]>;
  /** Highest committed seq per ingress incarnation (rebuilt from the log on open). */
  committedSeq(incarnation: string): number;
  /** Current epoch of an idempotent producer at this partition (rebuilt on open), if known. */
  producerEpoch?(producerId: string): number | undefined;
  stats(): PartitionStats;
  /** Deletes sealed segments whose newest record is older than retentionMs or beyond maxBytes in total. */
  applyRetention(retentionMs: number, maxBytes: number): Promise<number>;
  close(): Promise<void>;
}
