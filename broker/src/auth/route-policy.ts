// What each HTTP route needs, pure: open (health, readiness, metrics, the OpenAPI document),
// authentication only (topic metadata and cluster state, as in Narad v1), or
// an action on a topic. Keyed by the route pattern fastify matched, so a new
// route that is not listed here needs authentication plus the admin action
// (fail closed) until someone decides otherwise.

import type { Action } from "../../../packages/users/src/grants.ts";

export type Access =
  | { kind: "open" }
  | { kind: "authenticated" }
  | {
      kind: "action";
      action: Action;
      topic: string | undefined;
      /** The consumer group the request acts for (consume, declare, delete), checked against grants' groups. */
      group?: string;
      /** The topic is named in the body (POST /v1/topics): authorise after parsing, not in onRequest. */
      needsBody?: boolean;
      /** The same action is needed on this topic too: create-as-child links under a parent the caller must manage. */
      alsoTopic?: string;
    };

// The OpenAPI document describes the API, not its data.
const open = new Set(["/healthz", "/readyz", "/metrics", "/v1/openapi.json"]);

/** Routes that need only an authenticated principal (reads of metadata). */
const authenticatedOnly = new Set([
  "GET /v1/topics",
  "GET /v1/topics/:topic",
  "GET /v1/topics/:topic/groups",
  "GET /v1/topics/:topic/children",
  // Cluster state, as in Narad v1; decommission is not listed, so it needs admin.
  "GET /v1/cluster/members",
  "GET /v1/cluster/moves",
  // An idempotent producer's identity (id + epoch); producing still needs the produce grant.
  "POST /v1/producers",
  // Owner-or-admin, decided by the route once it has read the topic's owner (auth/user-rules.ts).
  "PATCH /v1/topics/:topic",
  "DELETE /v1/topics/:topic",
  // Attach and detach: owner-or-admin of the topics they link (auth/user-rules.ts linkManageRefusal).
  "POST /v1/topics/:topic/children",
  "DELETE /v1/topics/:topic/children/:child",
  // The Users API decides in its routes (auth/user-rules.ts): admin, or a user changing their own password.
  "POST /v1/users",
  "GET /v1/users",
  "GET /v1/users/:username",
  "DELETE /v1/users/:username",
  "PUT /v1/users/:username/grants",
  "POST /v1/users/:username/grants",
  "PUT /v1/users/:username/password",
]);

/** Routes whose group is named in the path (:group) or, for consume, the query (?group=, default "default"). */
const groupRoutes = new Set([
  "GET /v1/topics/:topic/consume",
  "PUT /v1/topics/:topic/groups/:group",
  "DELETE /v1/topics/:topic/groups/:group",
  "POST /v1/topics/:topic/groups/:group/seek",
]);

/** Topic routes and the action each needs on that topic. */
const topicActions: Record<string, Action> = {
  "POST /v1/topics/:topic/produce": "produce",
  "POST /v1/topics/:topic/produce-batch": "produce",
  "GET /v1/topics/:topic/consume": "consume",
  "POST /v1/topics/:topic/ack": "consume",
  "GET /v1/topics/:topic/records": "consume",
  // Declaring or dropping a subscription is part of consuming the topic.
  "PUT /v1/topics/:topic/groups/:group": "consume",
  "DELETE /v1/topics/:topic/groups/:group": "consume",
  // Moving the offset skips or replays what the group consumes: the same grant as acking.
  "POST /v1/topics/:topic/groups/:group/seek": "consume",
};

/**
 * `route` is the matched pattern (undefined when nothing matched: a 404 that
 * still needs authentication, so unknown paths tell strangers nothing);
 * `body` is only read for POST /v1/topics, whose topic name is in the body.
 */
export function requiredAccess(
  method: string,
  route: string | undefined,
  params: Readonly<Record<string, string | undefined>>,
  body: unknown,
  query: Readonly<Record<string, unknown>> = {},
  metricsNeedAuth = false,
): Access {
  if (route === undefined) return { kind: "authenticated" };
  // Metric labels name every topic and group: as private as GET /v1/topics.
  if (route === "/metrics" && metricsNeedAuth) return { kind: "authenticated" };
  if (open.has(route)) return { kind: "open" };
  // fastify answers HEAD with the GET route.
  const key = `${method === "HEAD" ? "GET" : method} ${route}`;
  if (authenticatedOnly.has(key)) return { kind: "authenticated" };
  if (route.startsWith("/admin/")) return { kind: "action", action: "admin", topic: undefined };
  if (key === "POST /v1/topics") {
    const fields = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
    const name = fields.name;
    // No name: the route answers 400; the grant check needs some topic, and
    // "" matches only a "*" grant.
    return {
      kind: "action",
      action: "create",
      topic: typeof name === "string" ? name : "",
      // With a parent (create-as-child) the route also checks that the caller manages it.
      needsBody: true,
    };
  }
  const action = topicActions[key];
  if (action !== undefined && groupRoutes.has(key)) {
    const q = query.group;
    const group = params.group ?? (typeof q === "string" && q !== "" ? q : "default");
    return { kind: "action", action, topic: params.topic ?? "", group };
  }
  if (key === "POST /v1/topics/:topic/ack" && action !== undefined) {
    // The handle names its group ("<group>:<p>:<o>:<epoch>.<nonce>", no prefix: default).
    const h = query.receipt_handle;
    const parts = typeof h === "string" ? h.split(":") : [];
    const group = parts.length === 4 ? (parts[0] as string) : "default";
    return { kind: "action", action, topic: params.topic ?? "", group };
  }
  if (action !== undefined) return { kind: "action", action, topic: params.topic ?? "" };
  return { kind: "action", action: "admin", topic: undefined };
}
