// Authentication and RBAC on the HTTP API. onRequest authenticates (before
// the body is read, so a stranger's upload costs nothing) and puts the
// principal on request.principal (the per-client rate limiter keys on it);
// preHandler checks the route's action against the principal's grants (the
// body is parsed by then: POST /v1/topics names its topic there). Health,
// readiness and metrics stay open. Replies: 401 + WWW-Authenticate, 403
// naming the action and topic, 429/503 + Retry-After. /metrics needs
// authentication too unless --metrics-auth off (its labels name topics).

import type { FastifyInstance, FastifyReply } from "fastify";
import { Counter, type Registry } from "prom-client";
import type { Action } from "../../../../packages/users/src/grants.ts";
import { type ApiErrorCode, errorBody } from "../../api-errors.ts";
import { type Authenticator, type Principal, principalAllows } from "../../auth/authenticator.ts";
import { requiredAccess } from "../../auth/route-policy.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Who sent the request (undefined: auth off, or an open route). */
    principal?: Principal;
  }
}

export const wwwAuthenticate = 'Basic realm="narad"';

export interface AuthPluginOptions {
  authenticator: Authenticator;
  registry: Registry;
  /** /metrics needs authentication (--metrics-auth). */
  metricsNeedAuth?: boolean;
}

function params(raw: unknown): Record<string, string | undefined> {
  return typeof raw === "object" && raw !== null ? (raw as Record<string, string | undefined>) : {};
}

export function registerAuth(app: FastifyInstance, o: AuthPluginOptions): void {
  const failures = new Counter({
    name: "narad_auth_failures_total",
    help: "HTTP requests refused by authentication (401/429/503) or authorisation (403), by reason",
    labelNames: ["reason"],
    registers: [o.registry],
  });
  app.decorateRequest("principal", undefined);

  app.addHook("onRequest", async (request, reply) => {
    const access = requiredAccess(
      request.method,
      request.routeOptions.url,
      params(request.params),
      undefined,
      params(request.query),
      o.metricsNeedAuth === true,
    );
    if (access.kind === "open") return;
    const outcome = await o.authenticator.authenticate(request.headers.authorization, request.ip);
    if (outcome.ok) {
      request.principal = outcome.principal;
      // Authorise now when the route names its topic in the path: this runs
      // before admission control reserves produce memory for the body, so a
      // user without the grant is refused before it can hold any budget.
      // (POST /v1/topics names its topic in the body: checked in preHandler.)
      if (access.kind === "action" && !access.needsBody)
        return forbidIfDenied(outcome.principal, access, reply);
      return;
    }
    failures.inc({ reason: outcome.reason });
    if (outcome.status === 401) reply.header("www-authenticate", wwwAuthenticate);
    if (outcome.retryAfterSeconds !== undefined)
      reply.header("retry-after", String(outcome.retryAfterSeconds));
    return refuse(
      reply,
      outcome.status,
      outcome.message,
      outcome.reason === "users_unavailable" ? "users_unavailable" : undefined,
    );
  });

  app.addHook("preHandler", async (request, reply) => {
    const p = request.principal;
    if (p === undefined) return;
    const access = requiredAccess(
      request.method,
      request.routeOptions.url,
      params(request.params),
      request.body,
      params(request.query),
      o.metricsNeedAuth === true,
    );
    if (access.kind !== "action") return;
    return forbidIfDenied(p, access, reply);
  });

  const forbidIfDenied = (
    p: Principal,
    access: { action: Action; topic: string | undefined; group?: string | undefined; alsoTopic?: string },
    reply: FastifyReply,
  ): FastifyReply | undefined => {
    if (access.alsoTopic !== undefined && !principalAllows(p, access.action, access.alsoTopic, undefined))
      return forbidIfDenied(p, { action: access.action, topic: access.alsoTopic }, reply);
    if (principalAllows(p, access.action, access.topic, access.group)) return undefined;
    failures.inc({ reason: "forbidden" });
    const what = access.topic === undefined ? "the admin API" : `topic "${access.topic}"`;
    const group = access.group === undefined ? "" : ` (group "${access.group}")`;
    return refuse(reply, 403, `user "${p.name}" may not ${access.action} on ${what}${group}`);
  };
}

/** 401 unauthenticated, 403 forbidden; the authenticator's 429 (login throttle) and 503 (busy hashing). */
const refusalCodes = {
  401: "unauthenticated",
  403: "forbidden",
  429: "rate_limited",
  503: "unavailable",
} as const satisfies Record<number, ApiErrorCode>;

function refuse(
  reply: FastifyReply,
  status: keyof typeof refusalCodes,
  message: string,
  code?: ApiErrorCode,
): FastifyReply {
  return reply.code(status).send(errorBody(code ?? refusalCodes[status], message));
}
