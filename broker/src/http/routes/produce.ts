// Produce: POST /v1/topics/:topic/produce (one raw message) and
// POST /v1/topics/:topic/produce-batch (many records, one WAL group).
// A 202 is sent only after the ingress WAL has fsynced the bytes.
// Query parameter `acks` (http/produce-acks.ts): 0 answers on receipt, wal
// (the default) after the WAL fsync, all after the owner committed the
// records, with their offsets (dispatch/commit-waiters.ts).
// Idempotent producers send narad-producer-id/-epoch/-seq (producer-headers.ts)
// with acks=all: the id must come from POST /v1/producers; this node refuses
// an epoch below the registry's (409 producer_fenced), or, when its view of
// the registry is older than the fence lease and the store cannot be read,
// decides nothing (503 producer_registry_stale); the owner checks the
// sequence and answers a retry with its original result (core/producer-sequence.ts).

import type { FastifyInstance } from "fastify";
import { AdmissionBudget } from "../../admission/budget.ts";
import { type ApiErrorCode, errorBody } from "../../api-errors.ts";
import {
  type BatchLimits,
  batchContentTypes,
  batchMaxKeyBytes,
  decodeBinaryBatch,
  decodeNdjsonBatch,
} from "../../core/batch-codec.ts";
import { choosePartition, createRotator, generateKey } from "../../core/partitioner.ts";
import type { WalRecordInput } from "../../core/records.ts";
import type { CommitWaiters } from "../../dispatch/commit-waiters.ts";
import { badRequest, draining, NaradError } from "../../errors.ts";
import { directProduceProblem } from "../../fanout/rules.ts";
import type { TopicConfig } from "../../meta/types.ts";
import { ProducerRegistryStaleError } from "../../producers/registry.ts";
import type { BrokerServices } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { holdAdmission, registerAdmission } from "../plugins/admission.ts";
import { RateLimits } from "../plugins/rate-limit.ts";
import { registerRawBody } from "../plugins/raw-body.ts";
import { type Acks, acksAllAnswer, parseAcks } from "../produce-acks.ts";
import { type ProducerHeader, parseProducerHeaders, stampRecords } from "../producer-headers.ts";
import { querySchema, topicParams } from "../query-schema.ts";
import { SchemaGate } from "../schema-validation.ts";
import { TopicDeletionWatch } from "../topic-deletion-watch.ts";
import { requireTopic } from "./topics.ts";

interface ProduceQuery {
  key?: string;
  partition?: string;
  acks?: string;
}

/** A refusal with a machine-readable code: answered as JSON {error, code}. */
class CodedRefusal extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly retryAfterSeconds: number | undefined;
  constructor(status: number, code: ApiErrorCode, message: string, retryAfterSeconds?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

const emptyBody = Buffer.alloc(0);

/**
 * The incarnation a record is accepted for: stored in the WAL record so the
 * dispatcher never commits it into a later topic of the same name. A topic
 * without a uid (a NaradTopic the API server returned without one) writes a
 * uid-less record, which follows the name, as records did before uids.
 */
function walTopicUid(topic: TopicConfig): string | undefined {
  return topic.uid === "" ? undefined : topic.uid;
}

export function produceRoutes(s: BrokerServices) {
  const rotator = createRotator();
  let keyCounter = 0;
  const maxRecord = s.config.wal.maxRecordBytes;
  const registry = s.producerRegistry;
  const waiters = s.commitWaiters;
  const ackTimeoutMs = s.config.acksAllTimeoutMs;
  const deletions = new TopicDeletionWatch(s.metastore);
  // Admission control and rate limits (README "Overload protection").
  const m = s.metrics;
  m.admissionBudgetBytes.set(s.config.admission.budgetBytes);
  const budget = new AdmissionBudget({
    capacityBytes: s.config.admission.budgetBytes,
    timeoutMs: s.config.admission.timeoutMs,
    sink: {
      state: (used, waiters) => {
        m.admissionUsedBytes.set(used);
        m.admissionWaiters.set(waiters);
      },
      waited: (seconds) => m.admissionWaitSeconds.observe(seconds),
      rejected: (reason) => {
        m.admissionRejected.inc({ reason });
        m.produceRejected.inc({ reason: reason === "timeout" ? "admission_timeout" : "admission_too_large" });
      },
    },
  });
  // JSON Schema of the topic, checked before the WAL append (schema-validation.ts).
  const schemas = new SchemaGate({
    onViolation: () => m.produceRejected.inc({ reason: "schema_violation" }),
  });
  const limits = new RateLimits({
    ...s.config.rateLimits,
    onLimited: (scope) => {
      m.rateLimited.inc({ scope });
      m.produceRejected.inc({ reason: `rate_limit_${scope}` });
    },
  });

  /** Parses the producer headers and the acks mode; refuses a fenced or unknown identity. */
  const producerOf = async (
    headers: Record<string, string | string[] | undefined>,
    acksParam: unknown,
  ): Promise<{ producer: ProducerHeader | undefined; acks: Acks }> => {
    const a = parseAcks(acksParam);
    if (!a.ok) throw new CodedRefusal(400, "invalid_acks", a.error);
    const h = parseProducerHeaders(headers);
    if (h === undefined) return { producer: undefined, acks: a.acks };
    if (a.acks !== "all") {
      throw new CodedRefusal(
        400,
        "acks_all_required",
        "an idempotent produce (narad-producer-* headers) needs acks=all: its answer is the owner's sequence check",
      );
    }
    // A miss (unknown id, or an epoch above the known one) re-reads the
    // registry first: the id or the bump may come from another broker a
    // moment ago. A lower epoch needs no read: epochs only grow. In cluster
    // mode a view older than the fence lease is re-read first as well (a
    // bump through another broker may not have reached it; docs/adr/0008);
    // when that read fails nothing is decided and nothing stored.
    let current: number | undefined;
    try {
      current = await registry?.lookup(h.id, h.epoch);
    } catch (err) {
      if (!(err instanceof ProducerRegistryStaleError)) throw err;
      s.metrics.produceRejected.inc({ reason: "producer_registry_stale" });
      throw new CodedRefusal(503, "producer_registry_stale", err.message, err.retryAfterSeconds ?? 1);
    }
    if (current === undefined) {
      throw new CodedRefusal(
        400,
        "unknown_producer_id",
        `producer id ${h.id} was not issued by this cluster; get one with POST /v1/producers`,
      );
    }
    if (h.epoch < current) {
      s.metrics.produceRejected.inc({ reason: "producer_fenced" });
      throw new CodedRefusal(
        409,
        "producer_fenced",
        `producer fenced: epoch ${h.epoch} < ${current} for producer ${h.id}; a newer instance of this producer took over`,
      );
    }
    if (h.epoch > current) {
      throw new CodedRefusal(
        400,
        "invalid_producer_epoch",
        `producer ${h.id} has epoch ${current}; epoch ${h.epoch} was never issued`,
      );
    }
    return { producer: h, acks: a.acks };
  };

  /**
   * Appends `records` and answers per `acks` (0: already answered by the caller's
   * onReceipt; wal: after the fsync; all: after the owner's commit).
   */
  const appendAndAnswer = async (
    request: Parameters<typeof holdAdmission>[0],
    topic: TopicConfig,
    records: WalRecordInput[],
    acks: Acks,
    idempotent: boolean,
    route: "local" | "forward" = "local",
  ): Promise<{ status: number; body?: unknown }> => {
    const release = holdAdmission(request);
    const disarm = acks === "all" ? waiters?.arm() : undefined;
    try {
      if (acks === "all" && waiters === undefined)
        throw new CodedRefusal(503, "acks_all_unavailable", "acks=all is not available on this node", 1);
      const appended = (await appendVia(route, records, acks, idempotent)) as
        | { firstSeq?: number; lastSeq?: number }
        | undefined;
      if (acks !== "all") return { status: 202 };
      release();
      const first = appended?.firstSeq;
      const last = appended?.lastSeq;
      if (first === undefined || last === undefined || last - first + 1 !== records.length)
        // After the append: the records are in the WAL and will be committed. Not
        // acks_all_unavailable, which clients read as "refused before the WAL".
        throw new CodedRefusal(
          503,
          "commit_timeout",
          "the WAL did not report the records' seqs; they are durable in this node's WAL and will still be committed",
          1,
        );
      // A client that hangs up stops waiting: the response close already gave
      // its admission share back, and its records are committed anyway.
      const hangUp = new AbortController();
      const onClose = () => hangUp.abort();
      if (request.raw.socket?.destroyed === true) hangUp.abort();
      else request.raw.socket?.once("close", onClose);
      // A delete of the topic ends the wait too (topic-deletion-watch.ts).
      const deletion = deletions.watch(topic.name, walTopicUid(topic));
      let outcomes: Awaited<ReturnType<CommitWaiters["wait"]>>;
      try {
        outcomes = await waiters!.wait(
          first,
          last,
          ackTimeoutMs,
          AbortSignal.any([hangUp.signal, deletion.signal]),
        );
      } finally {
        deletion.stop();
        request.raw.socket?.off("close", onClose);
      }
      const answer = acksAllAnswer(
        records.map((r) => r.partition),
        outcomes,
        idempotent,
        ackTimeoutMs,
        deletion.deleted ? { topic: topic.name } : undefined,
      );
      if (answer.status === 503) {
        s.metrics.produceRejected.inc({ reason: "commit_timeout" });
        throw new CodedRefusal(503, answer.code, answer.error, 1);
      }
      if (answer.status === 409 || answer.status === 410) {
        s.metrics.produceRejected.inc({ reason: answer.code });
        throw new CodedRefusal(answer.status, answer.code, answer.error);
      }
      return { status: 200, body: answer.results };
    } finally {
      release();
      disarm?.();
    }
  };

  const needsStablePartition = (): NaradError =>
    badRequest(
      "an idempotent produce needs a key or an explicit partition for every record, so a retry lands on the same partition",
    );

  const partitionFor = (topic: TopicConfig, key: Buffer | undefined, pinned: number): number => {
    const choice = choosePartition(
      { pinned: pinned >= 0 ? pinned : undefined, key },
      topic.partitions,
      rotator,
    );
    if (!choice.ok) throw badRequest(choice.reason);
    return choice.partition;
  };

  /**
   * "local": into this node's WAL. "forward": this node drains or is being
   * decommissioned; a peer's WAL takes the records (produce-forward.ts).
   */
  const admit = (): "local" | "forward" => {
    if (s.lifecycle.draining()) {
      if (s.forwardProduce !== undefined) return "forward";
      s.metrics.produceRejected.inc({ reason: "draining" });
      throw draining("this node is draining; retry on another node");
    }
    if (s.ingress.stats().poisoned) {
      s.metrics.produceRejected.inc({ reason: "wal_poisoned" });
      throw new NaradError(
        "UNAVAILABLE",
        "the ingress WAL failed a write or fsync; this node refuses produce",
        {
          retryAfterSeconds: 5,
        },
      );
    }
    return "local";
  };

  /** Only acks=wal and acks=0 are forwarded: acks=all answers with the owner's commit, idempotent produce with its sequence check, both tied to this node's WAL seqs. */
  const forwardable = (route: "local" | "forward", acks: Acks, idempotent: boolean): "local" | "forward" => {
    if (route === "local") return route;
    if (acks === "all" || idempotent) {
      s.metrics.produceRejected.inc({ reason: "draining" });
      throw draining("this node is draining; retry on another node");
    }
    return route;
  };

  /**
   * The WAL append, here or (forward) on a peer; resolves once the bytes are
   * fsynced somewhere. The route was chosen on admission, and the awaits since
   * (the producer registry) may have let this node start draining or see itself
   * Decommissioning; so it is chosen again here, right before the local append
   * assigns WAL seqs (synchronously). Once the flip is visible, no record
   * enters this WAL: the operator's "WAL empty" reading depends on it.
   */
  const appendVia = async (
    admitted: "local" | "forward",
    records: WalRecordInput[],
    acks: Acks,
    idempotent: boolean,
  ): Promise<unknown> => {
    const route = admitted === "local" ? forwardable(admit(), acks, idempotent) : admitted;
    if (route === "local") return s.ingress.append(records);
    const out = await s.forwardProduce!(records);
    if (out.kind === "stored") {
      m.produceForwarded.inc(records.length);
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

  /** Decodes under the record cap and counts a refusal by it (narad_limit_refusals_total). */
  const decodeBatch = (
    decode: typeof decodeBinaryBatch,
    body: Buffer,
    batchLimits: BatchLimits,
  ): ReturnType<typeof decodeBinaryBatch> => {
    try {
      return decode(body, maxRecord, batchLimits);
    } catch (err) {
      if (err instanceof NaradError && err.code === "PAYLOAD_TOO_LARGE")
        m.limitRefusals.inc({ limit: "batch_records" });
      throw err;
    }
  };

  // Counted per (topic, partition), as Narad labels them.
  const accepted = (topic: string, records: readonly WalRecordInput[]): void => {
    const perPartition = new Map<number, { messages: number; bytes: number }>();
    for (const r of records) {
      const c = perPartition.get(r.partition) ?? { messages: 0, bytes: 0 };
      c.messages++;
      c.bytes += r.payload.length;
      perPartition.set(r.partition, c);
    }
    for (const [p, c] of perPartition) {
      const labels = { topic, partition: String(p) };
      s.metrics.producedMessages.inc(labels, c.messages);
      s.metrics.producedBytes.inc(labels, c.bytes);
    }
  };

  /** acks=0: the answer is already sent; a failed append is only logged and counted. */
  const appendUnanswered = async (
    request: Parameters<typeof holdAdmission>[0],
    records: WalRecordInput[],
    topic: string,
    route: "local" | "forward",
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

  return async (app: FastifyInstance): Promise<void> => {
    // Bodies are opaque bytes here, whatever their content type; this parser
    // is encapsulated in this plugin so /v1/topics keeps its JSON parser.
    registerRawBody(app, {
      minBytesPerSecond: s.config.limits.bodyMinBytesPerSecond,
      graceMs: s.config.limits.bodyGraceMs,
      onTooSlow: () => m.limitRefusals.inc({ limit: "body_rate" }),
    });
    registerAdmission(app, budget);
    // Coded refusals of the acks / producer path: {error, code}, before the generic error plugin.
    app.setErrorHandler((error, _request, reply) => {
      if (error instanceof CodedRefusal) {
        if (error.retryAfterSeconds !== undefined)
          reply.header("retry-after", String(error.retryAfterSeconds));
        return reply.code(error.status).send(errorBody(error.code, error.message));
      }
      throw error;
    });

    app.post<{ Params: { topic: string }; Querystring: ProduceQuery }>(
      "/v1/topics/:topic/produce",
      {
        bodyLimit: s.config.produceMaxBodyBytes,
        schema: {
          tags: ["produce"],
          summary: "Produce one message",
          description:
            "The body is the message, bytes as they are (any Content-Type). 202 once the WAL fsynced it (acks=wal), " +
            "on receipt (acks=0), or 200 with its partition and offset once committed (acks=all). Idempotent " +
            "producers send narad-producer-id, -epoch and -seq headers with acks=all.",
          params: topicParams,
          querystring: querySchema({
            key: "partitioning key (UTF-8); absent: round-robin",
            partition: "write to this partition",
            acks: "0, wal (default) or all",
          }),
        },
      },
      async (request, reply) => {
        const admitted = admit();
        const { producer, acks } = await producerOf(request.headers, request.query.acks);
        const route = forwardable(admitted, acks, producer !== undefined);
        const topic = requireTopic(s, request.params.topic);
        // A delay child's timeline comes only from its parent (409, as Narad).
        const linked = directProduceProblem(topic);
        if (linked !== undefined) throw linked;
        const pinned =
          parseOptionalInt(request.query.partition, "partition", 0, Number.MAX_SAFE_INTEGER) ?? -1;
        const given = request.query.key;
        const key = given === undefined || given === "" ? undefined : Buffer.from(given, "utf8");
        if (producer !== undefined && key === undefined && pinned < 0) throw needsStablePartition();
        const partition = partitionFor(topic, key, pinned);
        const payload = (request.body as Buffer | undefined) ?? emptyBody;
        // Narad v1 refuses an empty message; a client relying on that gets the same 400.
        if (payload.length === 0) throw badRequest("message required");
        const record: WalRecordInput = {
          topic: topic.name,
          key: key ?? Buffer.from(generateKey(++keyCounter), "latin1"),
          partition,
          createdMs: s.nowMs(),
          payload,
          topicUid: walTopicUid(topic),
        };
        if (producer !== undefined) record.producer = stampRecords(producer, [partition])[0];
        if (limits.enabled) limits.check(request, topic.name, 1);
        schemas.checkMessage(topic, payload);
        if (acks === "0") {
          reply.code(202).send();
          await appendUnanswered(request, [record], topic.name, route, producer !== undefined);
          return reply;
        }
        const res = await appendAndAnswer(request, topic, [record], acks, producer !== undefined, route);
        accepted(topic.name, [record]);
        if (res.status === 202) return reply.code(202).send();
        return reply.code(200).send((res.body as unknown[])[0]);
      },
    );

    app.post<{ Params: { topic: string } }>(
      "/v1/topics/:topic/produce-batch",
      {
        bodyLimit: s.config.batchMaxBodyBytes,
        schema: {
          tags: ["produce"],
          summary: "Produce a batch of records",
          description: `Content-Type ${batchContentTypes.binary} or ${batchContentTypes.ndjson} (one record per line: key, partition, payload). 202 {"accepted": N}, or 200 {"results": [...]} with acks=all.`,
          params: topicParams,
          querystring: querySchema({ acks: "0, wal (default) or all" }),
        },
      },
      async (request, reply) => {
        const admitted = admit();
        const { producer, acks } = await producerOf(request.headers, (request.query as ProduceQuery).acks);
        const route = forwardable(admitted, acks, producer !== undefined);
        const topic = requireTopic(s, request.params.topic);
        // A delay child's timeline comes only from its parent (409, as Narad).
        const linked = directProduceProblem(topic);
        if (linked !== undefined) throw linked;
        const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
        const body = (request.body as Buffer | undefined) ?? emptyBody;
        let entries: ReturnType<typeof decodeBinaryBatch>;
        const batchLimits = { maxRecords: s.config.limits.batchMaxRecords, maxKeyBytes: batchMaxKeyBytes };
        if (type === batchContentTypes.binary) entries = decodeBatch(decodeBinaryBatch, body, batchLimits);
        else if (type === batchContentTypes.ndjson)
          entries = decodeBatch(decodeNdjsonBatch, body, batchLimits);
        else {
          throw new NaradError(
            "UNSUPPORTED_MEDIA_TYPE",
            `content-type must be ${batchContentTypes.binary} or ${batchContentTypes.ndjson}`,
          );
        }
        if (entries.length === 0) throw badRequest("batch holds no records");
        const now = s.nowMs();
        const records: WalRecordInput[] = entries.map((e) => {
          const keyed = e.key.length > 0;
          if (producer !== undefined && !keyed && e.partition < 0) throw needsStablePartition();
          return {
            topic: topic.name,
            key: keyed ? e.key : Buffer.from(generateKey(++keyCounter), "latin1"),
            partition: partitionFor(topic, keyed ? e.key : undefined, e.partition),
            createdMs: now,
            payload: e.payload,
            topicUid: walTopicUid(topic),
          };
        });
        if (producer !== undefined) {
          const stamps = stampRecords(
            producer,
            records.map((r) => r.partition),
          );
          for (let i = 0; i < records.length; i++) records[i]!.producer = stamps[i];
        }
        if (limits.enabled) limits.check(request, topic.name, records.length);
        schemas.checkBatch(topic, records);
        if (acks === "0") {
          reply.code(202).send({ accepted: records.length });
          await appendUnanswered(request, records, topic.name, route, producer !== undefined);
          return reply;
        }
        const res = await appendAndAnswer(request, topic, records, acks, producer !== undefined, route);
        accepted(topic.name, records);
        if (res.status === 202) return reply.code(202).send({ accepted: records.length });
        return reply.code(200).send({ results: res.body });
      },
    );
  };
}
