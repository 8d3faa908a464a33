// Topic identity at the partition owner (issue #13 item 1): a commit names
// the topic incarnation (uid) its records were accepted for, and the owner
// appends only when its own view of the topic is that incarnation. Pure:
// the callers (cluster-destinations.ts for the local log, rpc/server.ts for
// CommitBatch) supply the view and throw the error.

import type { CommitRecord } from "./records.ts";

/** The owner's view of the topic disagrees with the commit's: refused, nothing appended (the dispatcher retries). */
export class TopicIdentityError extends Error {
  readonly code = "TOPIC_UID_MISMATCH";
}

/**
 * Why records naming `wanted` (undefined: a caller without uids) may not be
 * committed into a topic the owner sees as `view`, or undefined when they may.
 * A stale view on either side is refused rather than guessed at: the
 * dispatcher holds the records until both sides agree, and a deleted
 * incarnation's records end as a confirmed deletion, never in a namesake.
 */
export function topicIdentityProblem(
  topic: string,
  view: { uid: string } | undefined,
  wanted: string | undefined,
): string | undefined {
  if (view === undefined) return `topic "${topic}" not found`;
  if (wanted === undefined || wanted === view.uid) return undefined;
  return `topic "${topic}" is incarnation ${view.uid || "(none)"} here, the commit is for ${wanted}`;
}

/**
 * Why a batch of records cannot be checked as one commit, or the single uid
 * they all carry (undefined: none does). The planner gives every record of a
 * lane the same uid; a batch mixing uids is a bug upstream and is refused.
 */
export function batchTopicUid(
  records: readonly CommitRecord[],
): { ok: true; uid: string | undefined } | { ok: false; problem: string } {
  const uid = records[0]?.topicUid;
  for (const r of records)
    if (r.topicUid !== uid) return { ok: false, problem: "commit batch mixes topic uids" };
  return { ok: true, uid };
}

/** Throws TopicIdentityError unless `records` may be committed into the topic the owner sees as `view`. */
export function assertTopicIdentity(
  topic: string,
  view: { uid: string } | undefined,
  records: readonly CommitRecord[],
): void {
  const batch = batchTopicUid(records);
  if (!batch.ok) throw new TopicIdentityError(batch.problem);
  const problem = topicIdentityProblem(topic, view, batch.uid);
  if (problem !== undefined) throw new TopicIdentityError(problem);
}
