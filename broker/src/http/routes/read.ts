// Reads by offset: GET /v1/topics/:topic/records (bulk), and locateRead,
// which consume.ts uses for Narad v1 replay (consume with partition+offset).
// Only records below the high-watermark are ever returned.

import type { FastifyInstance } from "fastify";
import { messageJson } from "../../core/message-json.ts";
import { invalidQueryParameter, NaradError } from "../../errors.ts";
import type { BrokerServices } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { querySchema, topicParams } from "../query-schema.ts";
import { requireTopic } from "./topics.ts";

export interface ReadQuery {
  partition?: string;
  offset?: string;
  limit?: string;
  max_bytes?: string;
  wait?: string;
}

function parseRead(s: BrokerServices, topicName: string, q: ReadQuery) {
  const topic = requireTopic(s, topicName);
  const partition = parseOptionalInt(q.partition, "partition", 0, topic.partitions - 1);
  if (partition === undefined) throw invalidQueryParameter("partition is required when reading by offset");
  const offset = parseOptionalInt(q.offset, "offset", 0, Number.MAX_SAFE_INTEGER) ?? 0;
  return { topic, partition, offset };
}

/**
 * Resolves topic, partition (required) and offset (default 0) of a read; 410
 * below the oldest. Routed to the partition's owner (this node or a peer over
 * the cluster RPC; 503 + Retry-After when the owner is down): `log.read`
 * reads there. For a peer this costs two calls (stats, then read); readAt
 * does both in one.
 */
export async function locateRead(s: BrokerServices, topicName: string, q: ReadQuery) {
  const { topic, partition, offset } = parseRead(s, topicName, q);
  const st = await s.partitions.stats(topic.name, partition);
  if (offset < st.oldestOffset) {
    throw new NaradError(
      "OFFSET_EXPIRED",
      `offset ${offset} was removed by retention; oldest is ${st.oldestOffset}`,
    );
  }
  const log = {
    read: async (from: number, maxRecords: number, maxBytes: number) =>
      (await s.partitions.read(topic.name, partition, from, maxRecords, maxBytes)).records,
  };
  return { topic, partition, offset, log, hwm: st.highWatermark };
}

/** One routed read at the partition's owner: records from the offset (none at the HWM), 410 below the oldest. */
export async function readAt(
  s: BrokerServices,
  topicName: string,
  q: ReadQuery,
  maxRecords: number,
  maxBytes: number,
) {
  const { topic, partition, offset } = parseRead(s, topicName, q);
  const res = await s.partitions.read(topic.name, partition, offset, maxRecords, maxBytes);
  return { topic, partition, offset, records: res.records, hwm: res.highWatermark };
}

export function readRoutes(s: BrokerServices) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: { topic: string }; Querystring: ReadQuery }>(
      "/v1/topics/:topic/records",
      {
        schema: {
          tags: ["consume"],
          summary: "Read records by offset",
          description:
            "Records of one partition from an offset, below the high watermark; no lease, no receipt handle. 410 offset_expired below the oldest offset.",
          params: topicParams,
          querystring: querySchema({
            partition: "partition to read (required)",
            offset: "first offset (default 0)",
            limit: `records at most (default and cap ${s.config.read.maxRecords})`,
            max_bytes: `payload bytes at most (default and cap ${s.config.read.maxBytes})`,
          }),
        },
      },
      async (request, reply) => {
        const q = request.query;
        const { maxRecords, maxBytes: maxBytesCap } = s.config.read;
        const limit = parseOptionalInt(q.limit, "limit", 1, maxRecords) ?? maxRecords;
        const maxBytes = parseOptionalInt(q.max_bytes, "max_bytes", 1, maxBytesCap) ?? maxBytesCap;
        const { topic, partition, offset, records, hwm } = await readAt(
          s,
          request.params.topic,
          q,
          limit,
          maxBytes,
        );
        const last = records[records.length - 1];
        const next = last === undefined ? Math.max(offset, Math.min(offset, hwm)) : last.offset + 1;
        s.metrics.consumedMessages.inc({ topic: topic.name, partition: String(partition) }, records.length);
        const body =
          `{"topic":${JSON.stringify(topic.name)},"partition":${partition},"next_offset":${next}` +
          `,"high_watermark":${hwm},"records":[${records.map((r) => messageJson(r, { topic: topic.name, partition })).join(",")}]}`;
        return reply.type("application/json").send(body);
      },
    );
  };
}
