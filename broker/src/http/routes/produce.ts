// Produce: POST /v1/topics/:topic/produce (one raw message) and
// POST /v1/topics/:topic/produce-batch (many records, one WAL group).
// Both run the one produce pipeline (../produce/pipeline.ts): a route only
// parses its input shape into records and renders its answer. A 202 is sent
// only after the ingress WAL has fsynced the bytes.
// Query parameter `acks` (http/produce-acks.ts): 0 answers on receipt, wal
// (the default) after the WAL fsync, all after the owner committed the
// records, with their offsets (dispatch/commit-waiters.ts).
// Idempotent producers send narad-producer-id/-epoch/-seq (producer-headers.ts)
// with acks=all (../produce/identity.ts).

import type { FastifyInstance, FastifyRequest } from "fastify";
import { errorBody } from "../../api-errors.ts";
import {
  batchContentTypes,
  batchMaxKeyBytes,
  decodeBinaryBatch,
  decodeNdjsonBatch,
} from "../../core/batch-codec.ts";
import type { WalRecordInput } from "../../core/records.ts";
import { badRequest, NaradError } from "../../errors.ts";
import type { BrokerServices } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { registerAdmission } from "../plugins/admission.ts";
import { registerRawBody } from "../plugins/raw-body.ts";
import { walTopicUid } from "../produce/decisions.ts";
import {
  type AnswerShape,
  createProducePipeline,
  type OpenProduce,
  type ProducePipeline,
} from "../produce/pipeline.ts";
import { CodedRefusal } from "../produce/refusal.ts";
import { querySchema, topicParams } from "../query-schema.ts";

interface ProduceQuery {
  key?: string;
  partition?: string;
  acks?: string;
}

const emptyBody = Buffer.alloc(0);

// Single produce: 202 with no body, or 200 with the record's {partition, offset}.
const messageShape: AnswerShape = {
  kind: "message",
  accepted: () => undefined,
  committed: (results) => results[0],
};

// Batch produce: 202 {"accepted": N}, or 200 {"results": [...]}.
const batchShape: AnswerShape = {
  kind: "batch",
  accepted: (count) => ({ accepted: count }),
  committed: (results) => ({ results }),
};

/** The one record of POST /produce: partition from ?partition, ?key, else round-robin. */
function messageRecord(
  p: ProducePipeline,
  s: BrokerServices,
  o: OpenProduce,
  query: ProduceQuery,
  body: unknown,
): WalRecordInput {
  const pinned = parseOptionalInt(query.partition, "partition", 0, Number.MAX_SAFE_INTEGER) ?? -1;
  const given = query.key;
  const key = given === undefined || given === "" ? undefined : Buffer.from(given, "utf8");
  p.requireStablePartition(o, key !== undefined, pinned);
  const partition = p.partitionFor(o.topic, key, pinned);
  const payload = (body as Buffer | undefined) ?? emptyBody;
  // Narad v1 refuses an empty message; a client relying on that gets the same 400.
  if (payload.length === 0) throw badRequest("message required");
  return {
    topic: o.topic.name,
    key: key ?? p.generatedKey(),
    partition,
    createdMs: s.nowMs(),
    payload,
    topicUid: walTopicUid(o.topic),
  };
}

/** The records of POST /produce-batch, decoded by content type under the batch caps. */
function batchRecords(
  p: ProducePipeline,
  s: BrokerServices,
  o: OpenProduce,
  request: FastifyRequest,
): WalRecordInput[] {
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  const decode =
    type === batchContentTypes.binary
      ? decodeBinaryBatch
      : type === batchContentTypes.ndjson
        ? decodeNdjsonBatch
        : undefined;
  if (decode === undefined) {
    throw new NaradError(
      "UNSUPPORTED_MEDIA_TYPE",
      `content-type must be ${batchContentTypes.binary} or ${batchContentTypes.ndjson}`,
    );
  }
  const body = (request.body as Buffer | undefined) ?? emptyBody;
  const batchLimits = { maxRecords: s.config.limits.batchMaxRecords, maxKeyBytes: batchMaxKeyBytes };
  let entries: ReturnType<typeof decodeBinaryBatch>;
  try {
    entries = decode(body, s.config.wal.maxRecordBytes, batchLimits);
  } catch (err) {
    // Counted as a refusal by the record cap (narad_limit_refusals_total).
    if (err instanceof NaradError && err.code === "PAYLOAD_TOO_LARGE")
      s.metrics.limitRefusals.inc({ limit: "batch_records" });
    throw err;
  }
  if (entries.length === 0) throw badRequest("batch holds no records");
  const now = s.nowMs();
  // Per record in order: the stable-partition check, the generated key, then the partition.
  return entries.map((e) => {
    const keyed = e.key.length > 0;
    p.requireStablePartition(o, keyed, e.partition);
    return {
      topic: o.topic.name,
      key: keyed ? e.key : p.generatedKey(),
      partition: p.partitionFor(o.topic, keyed ? e.key : undefined, e.partition),
      createdMs: now,
      payload: e.payload,
      topicUid: walTopicUid(o.topic),
    };
  });
}

export function produceRoutes(s: BrokerServices) {
  const pipeline = createProducePipeline(s);

  return async (app: FastifyInstance): Promise<void> => {
    // Bodies are opaque bytes here, whatever their content type; this parser
    // is encapsulated in this plugin so /v1/topics keeps its JSON parser.
    registerRawBody(app, {
      minBytesPerSecond: s.config.limits.bodyMinBytesPerSecond,
      graceMs: s.config.limits.bodyGraceMs,
      onTooSlow: () => s.metrics.limitRefusals.inc({ limit: "body_rate" }),
    });
    registerAdmission(app, pipeline.budget);
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
        const o = await pipeline.open(request, request.params.topic, request.query.acks);
        const record = messageRecord(pipeline, s, o, request.query, request.body);
        return pipeline.finish(request, reply, o, [record], messageShape);
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
        const o = await pipeline.open(request, request.params.topic, (request.query as ProduceQuery).acks);
        const records = batchRecords(pipeline, s, o, request);
        return pipeline.finish(request, reply, o, records, batchShape);
      },
    );
  };
}
