// Builds the broker's HTTP API as a fastify instance without listening, so
// tests can use inject() and main.ts decides where to listen.

import type { RequestListener } from "node:http";
import type { Server as HttpsServer } from "node:https";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { BrokerServices } from "../services.ts";
import { type AuthPluginOptions, registerAuth } from "./plugins/auth.ts";
import { answerClientError, answerFrameworkError, registerErrorHandling } from "./plugins/errors.ts";
import { registerHttpMetrics } from "./plugins/http-metrics.ts";
import { refuseQueryTypos } from "./query-schema.ts";
import { adminRoutes } from "./routes/admin.ts";
import { childrenRoutes } from "./routes/children.ts";
import { clusterRoutes } from "./routes/cluster.ts";
import { consumeRoutes } from "./routes/consume.ts";
import { healthRoutes } from "./routes/health.ts";
import { openApiRoutes, registerOpenApi } from "./routes/openapi.ts";
import { produceRoutes } from "./routes/produce.ts";
import { producerRoutes } from "./routes/producers.ts";
import { readRoutes } from "./routes/read.ts";
import { topicRoutes } from "./routes/topics.ts";
import { type UsersApi, userRoutes } from "./routes/users.ts";

export interface AppOptions {
  /** Authentication + RBAC (absent: auth off). */
  auth?: AuthPluginOptions;
  /** The Users API's sources and store (absent: auth off; the routes answer 501). */
  users?: UsersApi;
  /** Creates the listening server (HTTPS: http/tls.ts). */
  serverFactory?: (handler: RequestListener) => HttpsServer;
}

/**
 * Query strings as Narad (Go) reads them (url.Values.Get): a repeated
 * parameter counts once, with its first value. fastify's default turns
 * `?wait=1s&wait=2s` into an array, which the routes (typed as strings)
 * crashed on (500) or misread (`key=a&key=b` became a key of two zero
 * bytes), and which the authoriser and the route could read differently.
 */
export function firstValueQuery(raw: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of new URLSearchParams(raw)) if (!Object.hasOwn(out, k)) out[k] = v;
  return out;
}

export function buildApp(
  s: BrokerServices,
  logger: FastifyBaseLogger,
  opts: AppOptions = {},
): FastifyInstance {
  const lim = s.config.limits;
  const app = Fastify({
    ...(opts.serverFactory ? { serverFactory: opts.serverFactory } : {}),
    // Slow clients (docs/security.md): bounded head, whole request and
    // silence; checked every second rather than Node's default 30 s.
    http: { headersTimeout: lim.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    requestTimeout: lim.requestTimeoutMs,
    connectionTimeout: lim.idleTimeoutMs,
    loggerInstance: logger,
    // Per-request logs cost more than the produce itself; metrics cover requests.
    logController: new LogController({ disableRequestLogging: true }),
    // Every route without a limit of its own (topics, fan-out children,
    // subscriptions, producers, moves) takes the single-produce one
    // (--max-body-bytes): one setting, no JSON body larger than a message.
    // produce-batch and the users routes set their own.
    bodyLimit: s.config.produceMaxBodyBytes,
    // Topic names are case-sensitive and may contain dots.
    routerOptions: {
      caseSensitive: true,
      ignoreTrailingSlash: true,
      maxParamLength: 512,
      querystringParser: firstValueQuery,
    },
    // While the server closes, a request still arriving on a kept-alive
    // connection is answered 503 — except in a cluster, where a closing
    // broker is draining and forwards produce to a peer's WAL: serving it
    // then costs the client nothing (docs/produce-forwarding.md).
    return503OnClosing: s.forwardProduce === undefined,
    // Query strings are checked against each route's schema.querystring
    // (http/query-schema.ts). A parameter the route does not know is dropped
    // before the handler sees it, as Narad v1 ignores it, unless
    // --unknown-query-params refuses it: all of them (refuse), or by default
    // only a near miss of a known name (typos: ?kye= must not store a record
    // without its key). Bodies have no validating schema: handlers read them.
    ajv: { customOptions: { removeAdditional: s.config.unknownQueryParams !== "refuse" } },
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  });
  // A serverFactory (HTTPS) ignores the http options above.
  app.server.headersTimeout = lim.headersTimeoutMs;
  registerErrorHandling(app);
  if (s.config.unknownQueryParams === "typos") refuseQueryTypos(app);
  registerOpenApi(app);
  registerHttpMetrics(app, s.metrics);
  // Before every route and rate limiter: they may key on request.principal.
  if (opts.auth !== undefined) registerAuth(app, opts.auth);
  app.register(healthRoutes(s));
  app.register(openApiRoutes());
  app.register(topicRoutes(s));
  app.register(childrenRoutes(s));
  app.register(produceRoutes(s));
  app.register(producerRoutes(s));
  app.register(readRoutes(s));
  app.register(consumeRoutes(s));
  app.register(adminRoutes(s));
  app.register(clusterRoutes(s));
  app.register(userRoutes(opts.users));
  return app;
}
