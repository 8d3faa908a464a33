import type { WalRecord, WalRecordInput } from "../core/records.ts";

export interface IngressWalOptions {
  /** Directory that holds the segments, `incarnation` and `checkpoint`. */
  dir: string;
  segmentBytes: number;
  /** A fully dispatched active segment larger than this is rolled so it can be deleted. */
  rotateDispatchedBytes: number;
  maxRecordBytes: number;
  /** Upper bound on one group-commit write; larger groups are split. */
  maxGroupBytes: number;
  /** Backstop: the sync loop runs at least this often while appends are staged. */
  syncBackstopMs: number;
}

export interface WalStats {
  incarnation: string;
  /** Next seq to be assigned (last durable seq + 1). */
  nextSeq: number;
  /** Every record with seq < checkpoint has been dispatched durably. */
  checkpoint: number;
  /** nextSeq - checkpoint. */
  pendingRecords: number;
  segments: number;
  diskBytes: number;
  /** Frames skipped at recovery because their CRC or shape was wrong. */
  corruptFrames: number;
  poisoned: boolean;
}

/**
 * The ingress write-ahead log. Every promise returned by append resolves only
 * after the bytes are written and fdatasync'd; a write or sync failure rejects
 * every staged and later append (the WAL is poisoned) and is never retried.
 */
export interface IngressWal {
  readonly incarnation: string;
  /** Appends records as one unit (they share a group commit); resolves with their seqs. */
  append(records: readonly WalRecordInput[]): Promise<{ firstSeq: number; lastSeq: number }>;
  /** Durable records with seq >= fromSeq, at most maxRecords/maxBytes (always at least one if any). */
  read(fromSeq: number, maxRecords: number, maxBytes: number): Promise<WalRecord[]>;
  /** Durably records that every seq below `seq` is dispatched, then deletes wholly-covered segments. */
  setCheckpoint(seq: number): Promise<void>;
  stats(): WalStats;
  /** Called (synchronously, cheaply) after each group commit becomes durable. */
  onDurable(listener: () => void): void;
  close(): Promise<void>;
}
