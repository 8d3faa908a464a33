// Conversions between the broker's record shapes (core/records.ts,
// log/types.ts) and the Cluster proto messages, and the split of a commit
// batch into requests that fit the RPC message cap. Pure; no I/O.

import type { SeekTarget } from "../core/group-seek.ts";
import type { CommitRecord, ProducerStamp, StoredRecord } from "../core/records.ts";
import { badRequest } from "../errors.ts";
import type { CommitResult, PartitionStats } from "../log/types.ts";
import type {
  PbCommitBatchRequest,
  PbCommitBatchResponse,
  PbCommitRecord,
  PbPartitionStats,
  PbProducerStamp,
  PbSeekGroupRequest,
  PbStoredRecord,
} from "./proto.ts";

/** Protobuf bytes of one CommitRecord beyond key and payload (tags, lengths, varints), rounded up. */
export const pbCommitRecordOverheadBytes = 40;

export function pbCommitRecordBytes(r: { key: Buffer; payload: Buffer }): number {
  return r.key.length + r.payload.length + pbCommitRecordOverheadBytes;
}

/**
 * Turns one dispatcher batch into CommitBatch requests, in seq order: a new
 * request starts when the incarnation changes (a request carries one) or
 * when adding the next record would pass `maxRequestBytes`. A single record
 * larger than the cap still gets a request of its own (the message cap has a
 * margin above the largest record the WAL accepts).
 */
export function toCommitRequests(
  topic: string,
  partition: number,
  records: readonly CommitRecord[],
  maxRequestBytes: number,
): PbCommitBatchRequest[] {
  const out: PbCommitBatchRequest[] = [];
  const base = topic.length + 32;
  let cur: PbCommitBatchRequest | undefined;
  let bytes = 0;
  for (const r of records) {
    const size = pbCommitRecordBytes(r);
    if (
      cur === undefined ||
      cur.incarnation !== r.incarnation ||
      (cur.topic_uid ?? "") !== (r.topicUid ?? "") ||
      (cur.records.length > 0 && bytes + size > maxRequestBytes)
    ) {
      cur = { topic, partition, incarnation: r.incarnation, records: [], topic_uid: r.topicUid ?? "" };
      out.push(cur);
      bytes = base;
    }
    const pb: PbCommitRecord = { key: r.key, created_ms: r.createdMs, payload: r.payload, seq: r.seq };
    if (r.producer !== undefined) pb.producer = r.producer;
    cur.records.push(pb);
    bytes += size;
  }
  return out;
}

export function fromCommitRequest(req: PbCommitBatchRequest): CommitRecord[] {
  return req.records.map((r: PbCommitRecord) => {
    const c: CommitRecord = {
      key: r.key,
      createdMs: r.created_ms,
      payload: r.payload,
      incarnation: req.incarnation,
      seq: r.seq,
    };
    if (r.producer != null) c.producer = fromPbStamp(r.producer);
    if (req.topic_uid) c.topicUid = req.topic_uid;
    return c;
  });
}

function fromPbStamp(p: PbProducerStamp): ProducerStamp {
  return { id: p.id, epoch: p.epoch, seq: p.seq };
}

export function toCommitResponse(r: CommitResult): PbCommitBatchResponse {
  return {
    base_offset: r.baseOffset,
    appended: r.appended,
    duplicates: r.duplicates,
    fenced: r.fenced ?? 0,
    out_of_order: r.outOfOrder ?? 0,
    outcomes: r.outcomes ?? [],
  };
}

export function fromCommitResponse(r: PbCommitBatchResponse): CommitResult {
  const out: CommitResult = { baseOffset: r.base_offset, appended: r.appended, duplicates: r.duplicates };
  if (r.fenced > 0) out.fenced = r.fenced;
  if ((r.out_of_order ?? 0) > 0) out.outOfOrder = r.out_of_order;
  if (r.outcomes !== undefined && r.outcomes.length > 0) out.outcomes = r.outcomes.map(Number);
  return out;
}

/** Sums the results of the requests one batch was split into (the first appended offset wins). */
export function mergeCommitResults(results: readonly CommitResult[]): CommitResult {
  let baseOffset = -1;
  let appended = 0;
  let duplicates = 0;
  let fenced = 0;
  let outOfOrder = 0;
  let outcomes: number[] | undefined = [];
  for (const r of results) {
    if (baseOffset < 0 && r.appended > 0) baseOffset = r.baseOffset;
    appended += r.appended;
    duplicates += r.duplicates;
    fenced += r.fenced ?? 0;
    outOfOrder += r.outOfOrder ?? 0;
    if (r.outcomes === undefined) outcomes = undefined;
    else outcomes?.push(...r.outcomes);
  }
  const out: CommitResult = { baseOffset, appended, duplicates };
  if (fenced > 0) out.fenced = fenced;
  if (outOfOrder > 0) out.outOfOrder = outOfOrder;
  if (outcomes !== undefined && results.length > 0) out.outcomes = outcomes;
  return out;
}

export function toPbStoredRecord(r: StoredRecord): PbStoredRecord {
  const pb: PbStoredRecord = {
    offset: r.offset,
    key: r.key,
    commit_ms: r.commitMs,
    created_ms: r.createdMs,
    payload: r.payload,
    incarnation: r.incarnation,
    seq: r.seq,
  };
  if (r.producer !== undefined) pb.producer = r.producer;
  return pb;
}

export function fromPbStoredRecord(r: PbStoredRecord): StoredRecord {
  const out: StoredRecord = {
    offset: r.offset,
    key: r.key,
    commitMs: r.commit_ms,
    createdMs: r.created_ms,
    payload: r.payload,
    incarnation: r.incarnation,
    seq: r.seq,
  };
  if (r.producer != null) out.producer = fromPbStamp(r.producer);
  return out;
}

export function toPbStats(s: PartitionStats): PbPartitionStats {
  return {
    index: s.index,
    segments: s.segments,
    oldest_offset: s.oldestOffset,
    next_offset: s.nextOffset,
    high_watermark: s.highWatermark,
    size_bytes: s.sizeBytes,
    oldest_segment_at_ms: s.oldestSegmentAtMs ?? 0,
  };
}

export function fromPbStats(s: PbPartitionStats): PartitionStats {
  return {
    index: s.index,
    segments: s.segments,
    oldestOffset: s.oldest_offset,
    nextOffset: s.next_offset,
    highWatermark: s.high_watermark,
    sizeBytes: s.size_bytes,
    ...(s.oldest_segment_at_ms ? { oldestSegmentAtMs: s.oldest_segment_at_ms } : {}),
  };
}

/** A seek's target on the wire (SeekGroupRequest.to and .offset). */
export function seekTargetToPb(t: SeekTarget): Pick<PbSeekGroupRequest, "to" | "offset"> {
  return t.kind === "offset" ? { to: "offset", offset: t.offset } : { to: t.kind, offset: 0 };
}

export function seekTargetFromPb(req: Pick<PbSeekGroupRequest, "to" | "offset">): SeekTarget {
  if (req.to === "earliest" || req.to === "latest") return { kind: req.to };
  if (req.to === "offset") return { kind: "offset", offset: req.offset };
  throw badRequest(`seek target must be earliest, latest or offset, not "${req.to}"`);
}
