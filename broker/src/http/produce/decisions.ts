// The pure decisions of the produce pipeline (pipeline.ts): where a request's
// records go, whether a producer identity is accepted, what the WAL's answer
// means. No I/O and no metrics here: the steps that call these count and
// throw, so every refusal keeps its one status, code and message.

import type { ReplicaAssignment } from "../../../../packages/api/src/v1alpha1/replication.ts";
import type { WalRecordInput } from "../../core/records.ts";
import type { TopicConfig } from "../../meta/types.ts";
import type { Acks } from "../produce-acks.ts";

/** "local": into this node's WAL. "forward": a peer's WAL takes the records (produce-forward.ts). */
export type Route = "local" | "forward";

export interface NodeState {
  draining: boolean;
  /** This node can forward produce to a peer (a cluster member). */
  canForward: boolean;
  /** The ingress WAL failed a write or fsync; asked only when not draining (it reads the WAL's stats). */
  walPoisoned: () => boolean;
}

/** Draining wins over a poisoned WAL: a draining node forwards, and a forward does not touch this WAL. */
export function admissionRoute(n: NodeState): Route | "draining" | "wal_poisoned" {
  if (n.draining) return n.canForward ? "forward" : "draining";
  if (n.walPoisoned()) return "wal_poisoned";
  return "local";
}

/**
 * Only acks=wal and acks=0 are forwarded: acks=all answers with the owner's
 * commit, idempotent produce with its sequence check, both tied to this
 * node's WAL seqs.
 */
export function forwardableRoute(route: Route, acks: Acks, idempotent: boolean): Route | "draining" {
  if (route === "local") return route;
  return acks === "all" || idempotent ? "draining" : route;
}

export type ProducerVerdict = "ok" | "unknown_producer_id" | "producer_fenced" | "invalid_producer_epoch";

/** A producer's epoch against the registry's (`current`, undefined: id not issued). Epochs only grow. */
export function producerVerdict(epoch: number, current: number | undefined): ProducerVerdict {
  if (current === undefined) return "unknown_producer_id";
  if (epoch < current) return "producer_fenced";
  if (epoch > current) return "invalid_producer_epoch";
  return "ok";
}

/**
 * Sequences are per partition, so an idempotent record's partition must not
 * depend on the attempt: it needs a key or an explicit partition (pinned >= 0).
 */
export function lacksStablePartition(idempotent: boolean, keyed: boolean, pinned: number): boolean {
  return idempotent && !keyed && pinned < 0;
}

/**
 * The WAL seqs an append reported for `count` records, undefined when they do
 * not span exactly that many (a forward, or an ingress that reports none).
 */
export function appendedSeqs(appended: unknown, count: number): { first: number; last: number } | undefined {
  const a = appended as { firstSeq?: number; lastSeq?: number } | undefined;
  const first = a?.firstSeq;
  const last = a?.lastSeq;
  if (first === undefined || last === undefined || last - first + 1 !== count) return undefined;
  return { first, last };
}

/** Messages and payload bytes per partition, in first-seen order (the produced_* metrics' labels). */
export function perPartitionCounts(
  records: readonly WalRecordInput[],
): Map<number, { messages: number; bytes: number }> {
  const perPartition = new Map<number, { messages: number; bytes: number }>();
  for (const r of records) {
    const c = perPartition.get(r.partition) ?? { messages: 0, bytes: 0 };
    c.messages++;
    c.bytes += r.payload.length;
    perPartition.set(r.partition, c);
  }
  return perPartition;
}

/**
 * The incarnation a record is accepted for: stored in the WAL record so the
 * dispatcher never commits it into a later topic of the same name. A topic
 * without a uid (a NaradTopic the API server returned without one) writes a
 * uid-less record, which follows the name, as records did before uids.
 */
export function walTopicUid(topic: TopicConfig): string | undefined {
  return topic.uid === "" ? undefined : topic.uid;
}

/**
 * acks=all on a replicated topic (ADR 0007): refused before the WAL append
 * when a target partition's recorded ISR is below min_insync_replicas (the
 * answer would never come: nothing is acknowledged on fewer copies) or the
 * partition has no leader. `record` gives a partition's replicated record
 * (undefined: single-copy, or not placed yet: the commit wait decides).
 */
export function replicaRefusal(
  partitions: Iterable<number>,
  record: (partition: number) => Pick<ReplicaAssignment, "leader" | "isr"> | undefined,
  minInsync: number,
): { partition: number; message: string } | null {
  for (const p of new Set(partitions)) {
    const r = record(p);
    if (r === undefined) continue;
    if (r.leader === null)
      return { partition: p, message: `partition ${p} is offline: no in-sync replica is live` };
    if (r.isr.length < minInsync)
      return {
        partition: p,
        message: `partition ${p} has ${r.isr.length} in-sync replica(s), min_insync_replicas is ${minInsync}; nothing is acknowledged on fewer copies`,
      };
  }
  return null;
}
