// Fan-out children of a topic: /v1/topics/{parent}/children (attach, list
// with lag, detach), as Narad v1. The rules are fanout/rules.ts; the
// cursors that copy records are fanout/engine.ts.

import type { FastifyInstance } from "fastify";
import type { Principal } from "../../auth/authenticator.ts";
import { linkManageRefusal } from "../../auth/user-rules.ts";
import { badRequest, coded } from "../../errors.ts";
import { attachChild, detachChild, linkChanges } from "../../fanout/links.ts";
import { childrenOf } from "../../fanout/rules.ts";
import type { BrokerServices } from "../../services.ts";
import { childParams, querySchema, topicParams } from "../query-schema.ts";
import { topicToWire } from "../topic-wire.ts";
import { registerLenientJson, requireTopic } from "./topics.ts";

function parseAttach(body: unknown): { child: string; delayMs: number } {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("request body must be a JSON object");
  const obj = body as Record<string, unknown>;
  for (const f of Object.keys(obj))
    if (f !== "child" && f !== "delay_ms") throw badRequest(`unknown field "${f}"`);
  if (typeof obj.child !== "string" || obj.child === "") throw badRequest("child is required");
  const delay = obj.delay_ms ?? 0;
  if (typeof delay !== "number" || !Number.isSafeInteger(delay))
    throw badRequest("delay_ms must be an integer");
  if (delay < 0) throw badRequest("delay_ms must be >= 0");
  return { child: obj.child, delayMs: delay };
}

export function childrenRoutes(s: BrokerServices) {
  /** 403 not_topic_owner unless the caller may make this link change; a missing topic is left to the rules' 404. */
  const refuseUnlessLinker = (
    caller: Principal | undefined,
    change: "attach" | "detach",
    parentName: string,
    childName: string,
  ): void => {
    const parent = s.metastore.getTopic(parentName);
    const child = s.metastore.getTopic(childName);
    if (parent === undefined || child === undefined) return;
    const r = linkManageRefusal(caller, change, parent, child);
    if (r !== undefined) throw coded("FORBIDDEN", "not_topic_owner", r.message);
  };
  return async (app: FastifyInstance): Promise<void> => {
    // Bodies are JSON whatever the Content-Type says, as on /v1/topics.
    registerLenientJson(app);
    app.post<{ Params: { topic: string } }>(
      "/v1/topics/:topic/children",
      {
        schema: {
          tags: ["topics"],
          summary: "Attach a fan-out child",
          description:
            'Body (JSON): {"child": "...", "delay_ms": N}; 200 with the parent topic. Every record committed to the parent from now on is copied to the child (delay_ms > 0: no earlier than commit + delay). 404 when either topic is missing, 409 for a link fan-out forbids or a differing schema, 400 for a delay the parent\'s retention cannot hold.',
          params: topicParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const { child, delayMs } = parseAttach(request.body);
        const parent = request.params.topic;
        await linkChanges.run("links", () => {
          refuseUnlessLinker(request.principal, "attach", parent, child);
          return attachChild(s.metastore, parent, child, delayMs, s.nowMs());
        });
        request.log.info({ parent, child, delayMs }, "fan-out child attached");
        const t = requireTopic(s, parent);
        return topicToWire(t, s.metastore.listTopics());
      },
    );

    app.get<{ Params: { topic: string } }>(
      "/v1/topics/:topic/children",
      {
        schema: {
          tags: ["topics"],
          summary: "List fan-out children",
          description:
            "Each child with its delay_ms and lag_messages (parent high watermark minus cursor, summed over the cursors this node runs; lag_complete false when some run elsewhere or have not started).",
          params: topicParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const parent = requireTopic(s, request.params.topic);
        return {
          parent: parent.name,
          children: childrenOf(s.metastore.listTopics(), parent.name).map((c) => {
            const lag = s.fanout?.lag(parent.name, c.name) ?? { lagMessages: 0, complete: false };
            return {
              name: c.name,
              delay_ms: c.fanout_delay_ms ?? 0,
              lag_messages: lag.lagMessages,
              lag_complete: lag.complete,
            };
          }),
        };
      },
    );

    app.delete<{ Params: { topic: string; child: string } }>(
      "/v1/topics/:topic/children/:child",
      {
        schema: {
          tags: ["topics"],
          summary: "Detach a fan-out child",
          description:
            "204. The cursors stop; the child keeps its records and schema. A later attach starts afresh from the parent's tail.",
          params: childParams,
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const { topic, child } = request.params;
        await linkChanges.run("links", () => {
          refuseUnlessLinker(request.principal, "detach", topic, child);
          return detachChild(s.metastore, topic, child);
        });
        request.log.info({ parent: topic, child }, "fan-out child detached");
        return reply.code(204).send();
      },
    );
  };
}
