// Produce: POST /v1/topics/:topic/produce (one raw message) and
// POST /v1/topics/:topic/produce-batch (many records, one WAL group).
// A 202 is sent only after the ingress WAL has fsynced the bytes.
// Idempotent producers send narad-producer-id/-epoch/-seq (producer-headers.ts):
// the records carry the stamps to the owner, which drops duplicates and
// fenced epochs; this node refuses an epoch below the highest it saw (409).

import type { FastifyInstance } from "fastify";
import { AdmissionBudget } from "../../admission/budget.ts";
import {
  type BatchLimits,
  batchContentTypes,
  batchMaxKeyBytes,
  decodeBinaryBatch,
  decodeNdjsonBatch,
} from "../../core/batch-codec.ts";
import { choosePartition, createRotator, generateKey } from "../../core/partitioner.ts";
import type { WalRecordInput } from "../../core/records.ts";
import { badRequest, NaradError, unavailable } from "../../errors.ts";
import type { TopicConfig } from "../../meta/types.ts";
import { parseOptionalInt } from "../params.ts";
import { holdAdmission, registerAdmission } from "../plugins/admission.ts";
import { RateLimits } from "../plugins/rate-limit.ts";
import { registerRawBody } from "../plugins/raw-body.ts";
import {
  ProducerEpochCache,
  type ProducerHeader,
  parseProducerHeaders,
  stampRecords,
} from "../producer-headers.ts";
import type { BrokerServices } from "../services.ts";
import { requireTopic } from "./topics.ts";

interface ProduceQuery {
  key?: string;
  partition?: string;
}

const emptyBody = Buffer.alloc(0);

export function produceRoutes(s: BrokerServices) {
  const rotator = createRotator();
  let keyCounter = 0;
  const maxRecord = s.config.wal.maxRecordBytes;
  const epochs = new ProducerEpochCache();
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
  const limits = new RateLimits({
    ...s.config.rateLimits,
    onLimited: (scope) => {
      m.rateLimited.inc({ scope });
      m.produceRejected.inc({ reason: `rate_limit_${scope}` });
    },
  });

  /** Parses the producer headers and refuses a fenced epoch (409). */
  const producerOf = (headers: Record<string, string | string[] | undefined>): ProducerHeader | undefined => {
    const h = parseProducerHeaders(headers);
    if (h === undefined) return undefined;
    const fenced = epochs.check(h.id, h.epoch);
    if (fenced !== undefined) {
      s.metrics.produceRejected.inc({ reason: "producer_fenced" });
      throw fenced;
    }
    return h;
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

  const admit = (): void => {
    if (s.lifecycle.draining()) {
      s.metrics.produceRejected.inc({ reason: "draining" });
      throw unavailable("this node is draining; retry on another node", 1);
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

  const accepted = (topic: string, records: readonly WalRecordInput[]): void => {
    let bytes = 0;
    for (const r of records) bytes += r.payload.length;
    s.metrics.producedMessages.inc({ topic }, records.length);
    s.metrics.producedBytes.inc({ topic }, bytes);
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

    app.post<{ Params: { topic: string }; Querystring: ProduceQuery }>(
      "/v1/topics/:topic/produce",
      { bodyLimit: s.config.produceMaxBodyBytes },
      async (request, reply) => {
        admit();
        const producer = producerOf(request.headers);
        const topic = requireTopic(s, request.params.topic);
        const pinned =
          parseOptionalInt(request.query.partition, "partition", 0, Number.MAX_SAFE_INTEGER) ?? -1;
        const given = request.query.key;
        const key = given === undefined || given === "" ? undefined : Buffer.from(given, "utf8");
        if (producer !== undefined && key === undefined && pinned < 0) throw needsStablePartition();
        const partition = partitionFor(topic, key, pinned);
        const payload = (request.body as Buffer | undefined) ?? emptyBody;
        const record: WalRecordInput = {
          topic: topic.name,
          key: key ?? Buffer.from(generateKey(++keyCounter), "latin1"),
          partition,
          createdMs: s.nowMs(),
          payload,
        };
        if (producer !== undefined) record.producer = stampRecords(producer, [partition])[0];
        if (limits.enabled) limits.check(request, topic.name, 1);
        const release = holdAdmission(request);
        try {
          await s.ingress.append([record]);
        } finally {
          release();
        }
        if (producer !== undefined) epochs.observe(producer.id, producer.epoch);
        accepted(topic.name, [record]);
        return reply.code(202).send();
      },
    );

    app.post<{ Params: { topic: string } }>(
      "/v1/topics/:topic/produce-batch",
      { bodyLimit: s.config.batchMaxBodyBytes },
      async (request, reply) => {
        admit();
        const producer = producerOf(request.headers);
        const topic = requireTopic(s, request.params.topic);
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
        const release = holdAdmission(request);
        try {
          await s.ingress.append(records);
        } finally {
          release();
        }
        if (producer !== undefined) epochs.observe(producer.id, producer.epoch);
        accepted(topic.name, records);
        return reply.code(202).send({ accepted: records.length });
      },
    );
  };
}
