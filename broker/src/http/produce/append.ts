// The I/O edge of the produce pipeline: the WAL append (here, or on a peer
// when this node drains) and the answer per acks mode. A 202 (acks=wal) is
// returned only after the append resolved, that is after the WAL fsync; an
// acks=all answer waits for the owner's commit (dispatch/commit-waiters.ts).

import type { FastifyRequest } from "fastify";
import type { WalRecordInput } from "../../core/records.ts";
import type { CommitWaiters } from "../../dispatch/commit-waiters.ts";
import { draining } from "../../errors.ts";
import type { TopicConfig } from "../../meta/types.ts";
import { topicReplication } from "../../replication/topic-settings.ts";
import type { BrokerServices } from "../../services.ts";
import { holdAdmission } from "../plugins/admission.ts";
import { type Acks, acksAllAnswer, type RecordResult } from "../produce-acks.ts";
import { TopicDeletionWatch } from "../topic-deletion-watch.ts";
import { appendedSeqs, type Route, replicaRefusal, walTopicUid } from "./decisions.ts";
import { CodedRefusal } from "./refusal.ts";

export type Answer = { status: 202 } | { status: 200; results: RecordResult[] };

export interface AppenderDeps {
  s: BrokerServices;
  /** Admission (pipeline.ts), asked again right before a local append. */
  admitAgain: (acks: Acks, idempotent: boolean) => Route;
  /** Counts accepted records (produced_* metrics). */
  accepted: (topic: string, records: readonly WalRecordInput[]) => void;
}

export function createAppender({ s, admitAgain, accepted }: AppenderDeps) {
  const waiters = s.commitWaiters;
  const ackTimeoutMs = s.config.acksAllTimeoutMs;
  const deletions = new TopicDeletionWatch(s.metastore);

  /**
   * The WAL append, here or (forward) on a peer; resolves once the bytes are
   * fsynced somewhere. The route was chosen on admission, and the awaits since
   * (the producer registry) may have let this node start draining or see itself
   * Decommissioning; so it is chosen again here, right before the local append
   * assigns WAL seqs (synchronously). Once the flip is visible, no record
   * enters this WAL: the operator's "WAL empty" reading depends on it.
   */
  const appendVia = async (
    admitted: Route,
    records: WalRecordInput[],
    acks: Acks,
    idempotent: boolean,
  ): Promise<unknown> => {
    const route = admitted === "local" ? admitAgain(acks, idempotent) : admitted;
    if (route === "local") return s.ingress.append(records);
    const out = await s.forwardProduce!(records);
    if (out.kind === "stored") {
      s.metrics.produceForwarded.inc(records.length);
      return undefined;
    }
    if (out.kind === "inDoubt") {
      s.metrics.produceRejected.inc({ reason: "forward_in_doubt" });
      throw new CodedRefusal(
        504,
        "forward_in_doubt",
        `this node is draining; forwarding to ${out.via} failed after it may have stored the records (${out.reason})`,
      );
    }
    s.metrics.produceRejected.inc({ reason: "draining" });
    throw draining(
      `this node is draining and no peer took the records (${out.reason}); retry on another node`,
    );
  };

  /** Waits for the owner's commit of seqs first..last; a hang-up or a delete of the topic ends the wait. */
  const commitOutcomes = async (
    request: FastifyRequest,
    topic: TopicConfig,
    seqs: { first: number; last: number },
  ): Promise<{ outcomes: Awaited<ReturnType<CommitWaiters["wait"]>>; deleted: boolean }> => {
    // A client that hangs up stops waiting: the response close already gave
    // its admission share back, and its records are committed anyway.
    const hangUp = new AbortController();
    const onClose = () => hangUp.abort();
    if (request.raw.socket?.destroyed === true) hangUp.abort();
    else request.raw.socket?.once("close", onClose);
    // A delete of the topic ends the wait too (topic-deletion-watch.ts).
    const deletion = deletions.watch(topic.name, walTopicUid(topic));
    try {
      const outcomes = await waiters!.wait(
        seqs.first,
        seqs.last,
        ackTimeoutMs,
        AbortSignal.any([hangUp.signal, deletion.signal]),
      );
      return { outcomes, deleted: deletion.deleted };
    } finally {
      deletion.stop();
      request.raw.socket?.off("close", onClose);
    }
  };

  /**
   * Appends `records` and answers per `acks` (0: already answered by the caller's
   * onReceipt; wal: after the fsync; all: after the owner's commit).
   */
  const appendAndAnswer = async (
    request: FastifyRequest,
    topic: TopicConfig,
    records: WalRecordInput[],
    acks: Acks,
    idempotent: boolean,
    route: Route,
  ): Promise<Answer> => {
    const release = holdAdmission(request);
    const disarm = acks === "all" ? waiters?.arm() : undefined;
    try {
      if (acks === "all" && waiters === undefined)
        throw new CodedRefusal(503, "acks_all_unavailable", "acks=all is not available on this node", 1);
      if (acks === "all" && (topic.replication_factor ?? 1) > 1) {
        const refusal = replicaRefusal(
          records.map((r) => r.partition),
          (p) => s.metastore.replicaAssignment?.(topic.name, p),
          topicReplication(topic).minInsync,
        );
        if (refusal !== null) {
          s.metrics.produceRejected.inc({ reason: "not_enough_replicas" });
          throw new CodedRefusal(503, "not_enough_replicas", refusal.message, 1);
        }
      }
      const appended = await appendVia(route, records, acks, idempotent);
      if (acks !== "all") return { status: 202 };
      release();
      const seqs = appendedSeqs(appended, records.length);
      if (seqs === undefined)
        // After the append: the records are in the WAL and will be committed. Not
        // acks_all_unavailable, which clients read as "refused before the WAL".
        throw new CodedRefusal(
          503,
          "commit_timeout",
          "the WAL did not report the records' seqs; they are durable in this node's WAL and will still be committed",
          1,
        );
      const { outcomes, deleted } = await commitOutcomes(request, topic, seqs);
      const answer = acksAllAnswer(
        records.map((r) => r.partition),
        outcomes,
        idempotent,
        ackTimeoutMs,
        deleted ? { topic: topic.name } : undefined,
      );
      if (answer.status === 503) {
        s.metrics.produceRejected.inc({ reason: "commit_timeout" });
        throw new CodedRefusal(503, answer.code, answer.error, 1);
      }
      if (answer.status === 409 || answer.status === 410) {
        s.metrics.produceRejected.inc({ reason: answer.code });
        throw new CodedRefusal(answer.status, answer.code, answer.error);
      }
      return { status: 200, results: answer.results };
    } finally {
      release();
      disarm?.();
    }
  };

  /** acks=0: the answer is already sent; a failed append is only logged and counted. */
  const appendUnanswered = async (
    request: FastifyRequest,
    records: WalRecordInput[],
    topic: string,
    route: Route,
    idempotent: boolean,
  ): Promise<void> => {
    const release = holdAdmission(request);
    try {
      await appendVia(route, records, "0", idempotent);
      accepted(topic, records);
    } catch (err) {
      s.metrics.produceRejected.inc({ reason: "acks0_append_failed" });
      request.log.warn(
        { err, records: records.length },
        "acks=0 produce: WAL append failed after the answer",
      );
    } finally {
      release();
    }
  };

  return { appendAndAnswer, appendUnanswered };
}
