// The record shapes that flow through the broker's data path:
// HTTP → ingress WAL (WalRecord) → dispatcher → owner's partition log
// (CommitRecord in, StoredRecord out).

/** What a producer hands to the ingress WAL. */
export interface WalRecordInput {
  topic: string;
  /** Routing key; always present (the server generates one for keyless produce). */
  key: Buffer;
  /** Target partition chosen at ingress (hash, rotate or pinned). */
  partition: number;
  /** Wall-clock ms at ingress. */
  createdMs: number;
  payload: Buffer;
}

/** A record read back from the ingress WAL. seq is dense and starts at 1. */
export interface WalRecord extends WalRecordInput {
  seq: number;
}

/**
 * What the dispatcher asks a partition owner to commit. (incarnation, seq)
 * identifies the ingress record so the owner can drop re-commits.
 */
export interface CommitRecord {
  key: Buffer;
  createdMs: number;
  payload: Buffer;
  /** Ingress WAL incarnation id: 16 lowercase hex chars (8 random bytes). */
  incarnation: string;
  seq: number;
}

/** A committed record as read from a partition log. */
export interface StoredRecord {
  offset: number;
  key: Buffer;
  /** Commit time (ms) assigned by the owner. */
  commitMs: number;
  createdMs: number;
  payload: Buffer;
  incarnation: string;
  seq: number;
}
