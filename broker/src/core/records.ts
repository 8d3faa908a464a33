// The record shapes that flow through the broker's data path:
// HTTP → ingress WAL (WalRecord) → dispatcher → owner's partition log
// (CommitRecord in, StoredRecord out).

/**
 * Idempotent-producer identity of one record: producerId (1..64 chars of
 * [A-Za-z0-9._-]), epoch (u32) and a per-partition sequence (u53).
 */
export interface ProducerStamp {
  id: string;
  epoch: number;
  seq: number;
}

export const producerIdPattern = /^[A-Za-z0-9._-]{1,64}$/;
export const maxProducerEpoch = 0xffff_ffff;

/** Why a stamp cannot be stored, or undefined when it can. */
export function producerStampProblem(p: ProducerStamp): string | undefined {
  if (typeof p.id !== "string" || !producerIdPattern.test(p.id))
    return "producer id must be 1-64 chars of [A-Za-z0-9._-]";
  if (!Number.isInteger(p.epoch) || p.epoch < 0 || p.epoch > maxProducerEpoch)
    return "producer epoch must be a u32";
  if (!Number.isSafeInteger(p.seq) || p.seq < 0) return "producer seq must be a non-negative safe integer";
  return undefined;
}

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
  /** Present for idempotent producers (WAL record format 2). */
  producer?: ProducerStamp | undefined;
  /**
   * The uid of the topic incarnation the record was accepted for (formats 3
   * and 4). Absent only in records written before topics had uids: those
   * belong to whatever topic of that name exists.
   */
  topicUid?: string | undefined;
}

/** Topic uids are ascii (a Kubernetes UUID, or the file metastore's); at most this many bytes. */
export const topicUidMaxBytes = 64;
const topicUidPattern = /^[\x21-\x7e]{1,64}$/;

/** Why a topic uid cannot be carried in a WAL record, or undefined when it can. */
export function topicUidProblem(uid: string): string | undefined {
  return typeof uid === "string" && topicUidPattern.test(uid)
    ? undefined
    : "topic uid must be 1-64 printable ascii chars";
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
  /** Present for idempotent producers: the owner also dedups/fences by it. */
  producer?: ProducerStamp | undefined;
  /**
   * The topic incarnation the dispatcher resolved the record to; the owner
   * refuses the commit when its own view of the topic has another uid.
   * Absent from callers that predate topic uids (no check).
   */
  topicUid?: string | undefined;
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
  /** Present when the record came from an idempotent producer (record version 0x04). */
  producer?: ProducerStamp | undefined;
}
