// Topic administration: /v1/topics (create, list with keyset pagination,
// describe with partition_stats, patch, delete).

import type { FastifyInstance } from "fastify";
import { topicListLimitDefault, topicListLimitMax } from "../../api-contract.ts";
import type { Principal } from "../../auth/authenticator.ts";
import { linkManageRefusal, topicManageRefusal } from "../../auth/user-rules.ts";
import { capRefusal } from "../../core/topic-caps.ts";
import {
  parseCreateReplication,
  parsePatchReplication,
  type ReplicationContext,
  replicaBrokers,
} from "../../core/topic-replication.ts";
import { parseTopicCreate, parseTopicPatch } from "../../core/topic-spec.ts";
import { badRequest, coded, invalidQueryParameter, topicNotFound } from "../../errors.ts";
import { createAsChild, splitCreateLink } from "../../fanout/create-child.ts";
import { deleteParentUnlinking, linkChanges, propagateSchema } from "../../fanout/links.ts";
import { childSchemaPatchProblem, retentionPatchProblem } from "../../fanout/rules.ts";
import type { TopicConfig } from "../../meta/types.ts";
import type { BrokerServices } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { querySchema, topicParams } from "../query-schema.ts";
import { compileSchema } from "../schema-validation.ts";
import { SerialByKey } from "../serial-by-key.ts";
import { topicToWire } from "../topic-wire.ts";

interface TopicParams {
  topic: string;
}

/** 403 not_topic_owner unless the caller owns the topic or is an admin (auth off: anyone). */
function refuseUnlessManager(caller: Principal | undefined, topic: TopicConfig): void {
  const r = topicManageRefusal(caller, topic.name, topic.owner);
  if (r !== undefined) throw coded("FORBIDDEN", "not_topic_owner", r.message);
}

export function requireTopic(s: BrokerServices, name: string): TopicConfig {
  const topic = s.metastore.getTopic(name);
  if (topic === undefined) throw topicNotFound(name);
  return topic;
}

/**
 * The page token is the last topic name of the previous page, raw, as in
 * Narad (Go), whose clients build it themselves. Names are validated like
 * topic names so a token cannot smuggle anything else.
 */
function decodePageToken(s: BrokerServices, token: string | undefined): string {
  if (token === undefined || token === "") return "";
  if (!s.config.topicDefaults.namePattern.test(token)) throw invalidQueryParameter("page_token is invalid");
  return token;
}

/**
 * Topic bodies are JSON whatever the Content-Type says: Narad (Go) reads
 * them so, and `curl -d` sends form-urlencoded. An empty body reads as none.
 */
export function registerLenientJson(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(badRequest("request body must be JSON"), undefined);
    }
  });
}

async function partitionStats(s: BrokerServices, topic: TopicConfig, only: number | undefined) {
  const indexes = only === undefined ? [...Array(topic.partitions).keys()] : [only];
  return Promise.all(
    indexes.map(async (index) => {
      // At the owner: this node's log or a Stats call to the peer (503 when it is down).
      // Never opens an empty log (an fd each) or creates its directory.
      const st = await s.partitions.stats(topic.name, index);
      return {
        index,
        segments: st.segments,
        oldest_offset: st.oldestOffset,
        next_offset: st.nextOffset,
        high_watermark: st.highWatermark,
        size_bytes: st.sizeBytes,
        // Unix seconds, omitted while empty, as Narad (which reports the segment file's mtime).
        ...(st.oldestSegmentAtMs !== undefined
          ? { oldest_segment_at: Math.floor(st.oldestSegmentAtMs / 1000) }
          : {}),
        // For a replicated partition: the leader.
        owner_node: s.metastore.ownerOf(topic.name, index),
        ...replicaFields(s, topic.name, index),
      };
    }),
  );
}

/** A replicated partition's record (absent for a single-copy one): leader, replicas, ISR members, epoch. */
function replicaFields(s: BrokerServices, topic: string, partition: number) {
  const r = s.metastore.replicaAssignment?.(topic, partition);
  if (r === undefined) return {};
  return {
    leader: r.leader,
    replicas: [...r.replicas],
    isr: r.isr.map((m) => m.member),
    leader_epoch: r.leaderEpoch,
  };
}

export function topicRoutes(s: BrokerServices) {
  const replication = (): ReplicationContext => ({
    enabled: s.config.replication === "on",
    brokers: replicaBrokers(s.metastore.members()),
  });
  const refuseOverCaps = (addTopics: number, addPartitions: number): void => {
    const refusal = capRefusal(s.metastore.listTopics(), addTopics, addPartitions, s.config.limits);
    if (refusal === undefined) return;
    s.metrics.limitRefusals.inc({
      limit: addTopics > 0 && refusal.message.includes("max-topics") ? "topics" : "partitions",
    });
    throw refusal;
  };
  return async (app: FastifyInstance): Promise<void> => {
    registerLenientJson(app);
    app.post(
      "/v1/topics",
      {
        schema: {
          tags: ["topics"],
          summary: "Create a topic",
          description:
            'Body (JSON): {"name": "...", "partitions": N, "retention_ms": N, "retention_bytes": N, "replication_factor": N, "min_insync_replicas": N, ...}; 201 with the topic. replication_factor: 1 to 5 and at most the brokers (default 3 on a cluster of at least 3 brokers, else 1; always 1 while the broker runs with --replication off, where a factor above 1 is 400 replication_not_enabled); min_insync_replicas: 1 to the factor (default 2, capped at the factor). 409 topic_exists when the name is taken.',
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        // parent / fanout_delay_ms: create-as-child (fanout/create-child.ts).
        const { body, link } = splitCreateLink(request.body, (name) => s.metastore.getTopic(name));
        const parsed = {
          ...parseTopicCreate(body, s.config.topicDefaults, new Date(s.nowMs())),
          // A child gets its own settings, by the same rules (not its parent's).
          ...parseCreateReplication(body as Record<string, unknown>, replication()),
        };
        // The creator owns the topic (Narad v1); a client cannot name another owner.
        const by = request.principal;
        const topic =
          by === undefined || by.via === "cluster-secret" ? parsed : { ...parsed, owner: by.name };
        // An invalid schema is refused before anything is stored (400 schema_invalid).
        if (topic.schema !== undefined) compileSchema(topic.schema.definition);
        refuseOverCaps(s.metastore.getTopic(topic.name) === undefined ? 1 : 0, topic.partitions);
        const created =
          link === undefined
            ? await s.metastore.createTopic(topic)
            : await linkChanges.run("links", () => {
                // Linking under a parent is an attach: the caller must manage the parent too.
                const parent = s.metastore.getTopic(link.parent);
                const r = parent && linkManageRefusal(by, "attach", parent, undefined);
                if (r) throw coded("FORBIDDEN", "not_topic_owner", r.message);
                return createAsChild(s.metastore, topic, link, s.nowMs());
              });
        request.log.info(
          { topic: created.name, partitions: created.partitions, parent: created.parent },
          "topic created",
        );
        return reply.code(201).send(topicToWire(created, s.metastore.listTopics()));
      },
    );

    app.get<{ Querystring: { limit?: string; page_token?: string } }>(
      "/v1/topics",
      {
        schema: {
          tags: ["topics"],
          summary: "List topics",
          description:
            "Keyset pagination by name: pass next_page_token as page_token for the next page (empty: the last page).",
          querystring: querySchema({
            limit: `topics per page (default ${topicListLimitDefault}, at most ${topicListLimitMax})`,
            page_token: "next_page_token of the previous page",
          }),
        },
      },
      async (request) => {
        const limit =
          parseOptionalInt(request.query.limit, "limit", 1, Number.MAX_SAFE_INTEGER) ?? topicListLimitDefault;
        const after = decodePageToken(s, request.query.page_token);
        const all = s.metastore.listTopics();
        // Keyset pagination: the token is the last name returned, so pages stay
        // stable while topics are created or deleted between calls.
        let start = 0;
        if (after !== "") {
          start = all.findIndex((t) => t.name > after);
          if (start < 0) start = all.length;
        }
        const page = all.slice(start, start + Math.min(limit, topicListLimitMax));
        const more = start + page.length < all.length;
        const last = page[page.length - 1];
        return {
          topics: page.map((t) => topicToWire(t, all)),
          next_page_token: more && last !== undefined ? last.name : "",
        };
      },
    );

    app.get<{ Params: TopicParams; Querystring: { partition?: string } }>(
      "/v1/topics/:topic",
      {
        schema: {
          tags: ["topics"],
          summary: "Describe a topic",
          description:
            "The topic's settings with partition_stats (offsets, high watermark, size, owner) per partition; a replicated partition adds leader, replicas, isr (member ids) and leader_epoch.",
          params: topicParams,
          querystring: querySchema({ partition: "only this partition's stats" }),
        },
      },
      async (request) => {
        const topic = requireTopic(s, request.params.topic);
        const only = parseOptionalInt(request.query.partition, "partition", 0, topic.partitions - 1);
        return {
          ...topicToWire(topic, s.metastore.listTopics()),
          partition_stats: await partitionStats(s, topic, only),
        };
      },
    );

    // One PATCH of a topic at a time on this node: each is decided against
    // the state the previous one left (the next schema version, the partition growth).
    const patches = new SerialByKey();
    app.patch<{ Params: TopicParams }>(
      "/v1/topics/:topic",
      {
        schema: {
          tags: ["topics"],
          summary: "Change a topic's settings",
          description:
            "Body (JSON): the settings to change (partitions may only grow; min_insync_replicas from 1 to the replication factor; replication_factor is fixed: another value is 400 replication_factor_immutable); answers the updated topic.",
          params: topicParams,
          querystring: querySchema(),
        },
      },
      async (request) =>
        patches.run(request.params.topic, async () => {
          const topic = requireTopic(s, request.params.topic);
          refuseUnlessManager(request.principal, topic);
          const patch = {
            ...parseTopicPatch(request.body, topic, s.config.topicDefaults),
            ...parsePatchReplication(request.body as Record<string, unknown>, topic),
          };
          if (patch.schema !== undefined) compileSchema(patch.schema.definition);
          if (patch.partitions !== undefined) refuseOverCaps(0, patch.partitions - topic.partitions);
          // Fan-out: a child's schema is its parent's; a parent's retention must hold its delay children.
          const linkProblem =
            (patch.schema !== undefined ? childSchemaPatchProblem(topic) : undefined) ??
            (patch.retention_ms !== undefined
              ? retentionPatchProblem(s.metastore.listTopics(), topic.name, patch.retention_ms)
              : undefined);
          if (linkProblem !== undefined) throw linkProblem;
          const updated = await s.metastore.updateTopic(topic.name, patch);
          if (patch.schema !== undefined) await propagateSchema(s.metastore, topic.name, patch.schema);
          request.log.info({ topic: topic.name, patch }, "topic updated");
          return topicToWire(updated, s.metastore.listTopics());
        }),
    );

    app.delete<{ Params: TopicParams }>(
      "/v1/topics/:topic",
      {
        schema: {
          tags: ["topics"],
          summary: "Delete a topic",
          description: "Removes the topic and its records; 204.",
          params: topicParams,
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const topic = requireTopic(s, request.params.topic);
        refuseUnlessManager(request.principal, topic);
        // Metadata first: once the topic is gone from the metastore no new
        // produce is accepted, then its files are removed.
        // A deleted parent's children become standalone topics (as Narad), unlinked
        // before the delete so no crash leaves a link to a name a namesake may take.
        await linkChanges.run("links", () => deleteParentUnlinking(s.metastore, topic.name));
        await s.logs.deleteTopic(topic.name);
        await s.metrics.forgetTopic(topic.name);
        request.log.info({ topic: topic.name }, "topic deleted");
        return reply.code(204).send();
      },
    );
  };
}
