// Acknowledgement modes of produce (query parameter `acks`) and the answer an
// acks=all request gets from its records' outcomes at the owner. Pure.
//
//   acks=0    answered on receipt (202), before the WAL append: no promise
//   acks=wal  answered after the ingress WAL fsync (202, no offsets); the
//             default, and exactly the Narad v1 behaviour when `acks` is absent
//   acks=all  answered after the owner committed every record (200 with
//             partition and offset per record)

import { commitOutcome } from "../log/types.ts";

export type Acks = "0" | "wal" | "all";

export type AcksParse = { ok: true; acks: Acks; given: boolean } | { ok: false; error: string };

/**
 * The acks mode of a request that named none: the --default-acks setting,
 * where "auto" is acks=all on a replicated topic (the 202 then means the
 * records are on min_insync_replicas copies) and acks=wal on a single-copy
 * one. A node that forwards its produce (draining) takes acks=wal: the peer's
 * WAL holds the records, as Narad's 202 promises.
 */
export function implicitAcks(
  setting: "auto" | "wal" | "all",
  replicationFactor: number,
  forwarding: boolean,
): Acks {
  if (forwarding) return "wal";
  if (setting === "auto") return replicationFactor > 1 ? "all" : "wal";
  return setting;
}

export function parseAcks(v: unknown): AcksParse {
  if (v === undefined) return { ok: true, acks: "wal", given: false };
  if (v === "0" || v === "wal" || v === "all") return { ok: true, acks: v, given: true };
  return { ok: false, error: `acks must be 0, wal or all (got ${JSON.stringify(v)})` };
}

export interface RecordResult {
  partition: number;
  /** null: a duplicate whose original offset is no longer known at the owner. */
  offset: number | null;
}

export type AcksAllAnswer =
  | { status: 200; results: RecordResult[] }
  | { status: 409; code: "producer_fenced" | "out_of_order_sequence"; error: string }
  | { status: 503; code: "commit_timeout"; error: string }
  | { status: 410; code: "topic_deleted"; error: string };

/**
 * The answer for records bound for `partitions` whose owner outcomes are
 * `outcomes` (undefined: not committed within the wait). Any refusal wins
 * over a timeout, a timeout over success: the request succeeds only when
 * every record has an offset. When the wait ended because the deletion of
 * the records' topic incarnation was confirmed (`topicDeleted`), missing
 * records are answered 410: they will never be committed into a live topic,
 * and any that were committed went with it.
 */
export function acksAllAnswer(
  partitions: readonly number[],
  outcomes: ReadonlyArray<number | undefined>,
  idempotent: boolean,
  timeoutMs: number,
  topicDeleted?: { topic: string },
): AcksAllAnswer {
  let fenced = 0;
  let outOfOrder = 0;
  let missing = 0;
  const results: RecordResult[] = [];
  for (let i = 0; i < partitions.length; i++) {
    const o = outcomes[i];
    if (o === undefined) missing++;
    else if (o === commitOutcome.fenced) fenced++;
    else if (o === commitOutcome.outOfOrder) outOfOrder++;
    results.push({ partition: partitions[i]!, offset: o !== undefined && o >= 0 ? o : null });
  }
  if (fenced > 0) {
    return {
      status: 409,
      code: "producer_fenced",
      error: `producer fenced: a newer epoch of this producer exists; ${fenced} record(s) refused, none stored`,
    };
  }
  if (outOfOrder > 0) {
    return {
      status: 409,
      code: "out_of_order_sequence",
      error: `out of order sequence: ${outOfOrder} record(s) are not the next sequence of this producer at their partition (a gap, an overlap, an older sequence or a reused one); they were not stored`,
    };
  }
  if (missing > 0 && topicDeleted !== undefined) {
    return {
      status: 410,
      code: "topic_deleted",
      error: `topic "${topicDeleted.topic}" was deleted while this request waited for its commit: ${missing} of ${partitions.length} record(s) were not committed and never will be (they are discarded with the deleted topic); any that were committed are deleted with it. Do not retry into a re-created topic of the same name unless that is intended.`,
    };
  }
  if (missing > 0) {
    return {
      status: 503,
      code: "commit_timeout",
      error: `${missing} record(s) not committed at their partition owner within ${timeoutMs} ms; they are durable in this node's WAL and will still be committed. ${
        idempotent
          ? "Retry with the same producer id, epoch and sequence to get their result."
          : "A retry of a plain (non-idempotent) produce may store them twice."
      }`,
    };
  }
  return { status: 200, results };
}
