// Queue consumption (Narad v1):
//   GET  /v1/topics/:topic/consume?wait=&partition=&group=   one leased message (200) or 204
//   GET  /v1/topics/:topic/consume?partition=&offset=        replay by offset (read-only, no handle)
//   POST /v1/topics/:topic/ack?receipt_handle=&extend=       extend (true|1) / nack (0) / ack (absent, empty, false): 204; else 400
//   GET  /v1/topics/:topic/groups                            groups with per-partition committed, in_flight, lag
//   GET  /v1/topics/:topic/groups                            (+ declared, effective settings)
//   PUT  /v1/topics/:topic/groups/:group                     declare a subscription / update its settings: 200
//   DELETE /v1/topics/:topic/groups/:group                   forget a group and its declaration: 204, 404 when unknown
//   POST /v1/topics/:topic/groups/:group/seek                move the group's committed offset: 200 once fsynced

import type { FastifyInstance } from "fastify";
import { groupSettings } from "../../consumer/manager.ts";
import { defaultGroup } from "../../core/consumer-handle.ts";
import { parseSeekRequest } from "../../core/group-seek.ts";
import { messageJson } from "../../core/message-json.ts";
import { parseSubscription, withSubscription } from "../../core/topic-spec.ts";
import { badRequest, invalidQueryParameter, notFound } from "../../errors.ts";
import type { BrokerServices } from "../../services.ts";
import { parseDurationMs, parseOptionalInt } from "../params.ts";
import { groupParams, querySchema, topicParams } from "../query-schema.ts";
import { locateRead, type ReadQuery } from "./read.ts";
import { requireTopic } from "./topics.ts";

interface ConsumeQuery extends ReadQuery {
  group?: string;
}

interface AckQuery {
  receipt_handle?: string;
  extend?: string;
}

function parseGroup(s: BrokerServices, raw: string | undefined): string {
  if (raw === undefined || raw === "") return defaultGroup;
  if (!s.consumers.validGroup(raw))
    throw badRequest("group must match ^[A-Za-z0-9._-]{1,244}$ (244: the longest that fits a file name)");
  return raw;
}

/**
 * Narad (Go)'s rule, which its clients depend on: `true` or `1` extends the
 * lease, `0` nacks it, absent, empty or `false` acks, and anything else is
 * 400 (a typo must not settle a lease the client meant to keep).
 */
export function parseSettle(extend: string | undefined): "ack" | "extend" | "nack" {
  if (extend === "true" || extend === "1") return "extend";
  if (extend === "0") return "nack";
  if (extend === undefined || extend === "" || extend === "false") return "ack";
  throw invalidQueryParameter('invalid extend: want "true" (renew lease) or "0" (release for redelivery)');
}

export function consumeRoutes(s: BrokerServices) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: { topic: string }; Querystring: ConsumeQuery }>(
      "/v1/topics/:topic/consume",
      {
        schema: {
          tags: ["consume"],
          summary: "Consume one message",
          description:
            "Leases the group's next message: 200 with the message and its receipt_handle, or 204 when none arrived within wait. " +
            "With partition and offset: replays the record at that offset (read-only, no handle).",
          params: topicParams,
          querystring: querySchema({
            wait: "long-poll up to this Go duration (e.g. 5s; capped by --max-consume-wait)",
            group: 'consumer group (default "default")',
            partition: "only this partition",
            offset: "replay the record at this offset (with partition)",
            local_only: "sent by Narad (Go) cluster peers; ignored here",
          }),
        },
      },
      async (request, reply) => {
        const q = request.query;
        if (q.offset !== undefined) {
          // Replay: read-only, no lease, no receipt handle.
          const { topic, partition, offset, log, hwm } = await locateRead(s, request.params.topic, q);
          if (offset >= hwm) return reply.code(204).send();
          const [record] = await log.read(offset, 1, s.config.read.maxBytes);
          if (record === undefined) return reply.code(204).send();
          s.metrics.consumedMessages.inc({ topic: topic.name, partition: String(partition) });
          return reply.type("application/json").send(messageJson(record, { topic: topic.name, partition }));
        }
        const topic = requireTopic(s, request.params.topic);
        const partition = parseOptionalInt(q.partition, "partition", 0, topic.partitions - 1);
        const group = parseGroup(s, q.group);
        // Narad (Go) treats a negative wait as no wait, and caps long ones.
        const waitMs = Math.min(
          Math.max(parseDurationMs(q.wait, "wait") ?? 0, 0),
          s.config.consume.maxWaitMs,
        );
        // A client that hangs up stops its long-poll (no message is leased for it).
        const abort = new AbortController();
        reply.raw.once("close", () => abort.abort());
        const d = await s.consumers.consume(topic, group, partition, waitMs, abort.signal);
        if (d === undefined) return reply.code(204).send();
        s.metrics.consumedMessages.inc({ topic: topic.name, partition: String(d.partition) });
        return reply.type("application/json").send(
          messageJson(d.record, {
            topic: topic.name,
            partition: d.partition,
            receiptHandle: d.receiptHandle,
          }),
        );
      },
    );

    app.post<{ Params: { topic: string }; Querystring: AckQuery }>(
      "/v1/topics/:topic/ack",
      {
        schema: {
          tags: ["consume"],
          summary: "Ack, extend or nack a lease",
          description:
            "204. extend absent, empty or false acks; true or 1 extends the lease; 0 nacks (redelivers). 410 stale_receipt for a handle with no live lease.",
          params: topicParams,
          querystring: querySchema({
            receipt_handle: "the receipt_handle of the consumed message (required)",
            extend: "true|1 extend, 0 nack, absent/false ack",
          }),
        },
      },
      async (request, reply) => {
        const topic = requireTopic(s, request.params.topic);
        const handle = request.query.receipt_handle;
        if (handle === undefined || handle === "") throw invalidQueryParameter("receipt_handle is required");
        await s.consumers.settle(topic, handle, parseSettle(request.query.extend));
        return reply.code(204).send();
      },
    );

    app.get<{ Params: { topic: string } }>(
      "/v1/topics/:topic/groups",
      {
        schema: {
          tags: ["consume"],
          summary: "List consumer groups",
          description:
            "Each group's per-partition committed offset, in-flight leases and lag, with its declared settings.",
          params: topicParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const topic = requireTopic(s, request.params.topic);
        return { topic: topic.name, groups: await s.consumers.listGroups(topic) };
      },
    );

    app.put<{ Params: { topic: string; group: string } }>(
      "/v1/topics/:topic/groups/:group",
      {
        schema: {
          tags: ["consume"],
          summary: "Declare a subscription",
          description:
            "Body (JSON, optional): the group's settings (e.g. visibility timeout); 200 with the effective settings.",
          params: groupParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const topic = requireTopic(s, request.params.topic);
        const group = parseGroup(s, request.params.group);
        const sub = parseSubscription(group, request.body, s.config.topicDefaults);
        const updated = await s.metastore.updateTopic(topic.name, {
          subscriptions: withSubscription(topic, sub),
        });
        request.log.info({ topic: topic.name, subscription: sub }, "subscription declared");
        return { topic: updated.name, name: group, ...groupSettings(updated, group) };
      },
    );

    app.delete<{ Params: { topic: string; group: string } }>(
      "/v1/topics/:topic/groups/:group",
      {
        schema: {
          tags: ["consume"],
          summary: "Delete a consumer group",
          description:
            "Forgets the group's offsets, leases and declaration; 204, 404 not_found when unknown.",
          params: groupParams,
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const topic = requireTopic(s, request.params.topic);
        const group = parseGroup(s, request.params.group);
        const subs = topic.subscriptions ?? [];
        const declared = subs.some((x) => x.name === group);
        if (declared)
          await s.metastore.updateTopic(topic.name, { subscriptions: subs.filter((x) => x.name !== group) });
        if (!(await s.consumers.deleteGroup(topic, group)) && !declared)
          throw notFound(`group "${group}" of topic "${topic.name}" not found`);
        await s.metrics.forgetGroup(topic.name, group);
        request.log.info({ topic: topic.name, group }, "consumer group deleted");
        return reply.code(204).send();
      },
    );

    app.post<{ Params: { topic: string; group: string } }>(
      "/v1/topics/:topic/groups/:group/seek",
      {
        schema: {
          tags: ["consume"],
          summary: "Move a consumer group's offset",
          description:
            'Body (JSON): {"to":"earliest"|"latest","partition"?:N} or {"offset":N,"partition":N}. ' +
            "Sets the group's committed offset in each partition named (all without partition), " +
            "at each partition's owner, and answers 200 with the offsets before and after once each is fsynced. " +
            "Leases of those partitions are dropped (their receipt handles answer 410); " +
            "an offset below retention starts at the oldest record, one past the high watermark is 400. " +
            "An unknown group is created.",
          params: groupParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const topic = requireTopic(s, request.params.topic);
        const group = parseGroup(s, request.params.group);
        const seek = parseSeekRequest(request.body, topic.partitions);
        // One partition after another: a failure part-way (an owner unreachable)
        // leaves the earlier ones moved, and the same request again is harmless.
        const partitions = [];
        for (const p of seek.partitions)
          partitions.push(await s.consumers.seek(topic, group, p, seek.target));
        request.log.info({ topic: topic.name, group, target: seek.target }, "consumer group seek");
        return { topic: topic.name, name: group, partitions };
      },
    );
  };
}
