// Builds the broker's HTTP API as a fastify instance without listening, so
// tests can use inject() and main.ts decides where to listen.

import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { registerErrorHandling } from "./plugins/errors.ts";
import { registerHttpMetrics } from "./plugins/http-metrics.ts";
import { adminRoutes } from "./routes/admin.ts";
import { consumeRoutes } from "./routes/consume.ts";
import { healthRoutes } from "./routes/health.ts";
import { produceRoutes } from "./routes/produce.ts";
import { readRoutes } from "./routes/read.ts";
import { topicRoutes } from "./routes/topics.ts";
import type { BrokerServices } from "./services.ts";

export function buildApp(s: BrokerServices, logger: FastifyBaseLogger): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger,
    // Per-request logs cost more than the produce itself; metrics cover requests.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
    // Topic names are case-sensitive and may contain dots.
    routerOptions: { caseSensitive: true, ignoreTrailingSlash: true, maxParamLength: 512 },
    return503OnClosing: true,
  });
  registerErrorHandling(app);
  registerHttpMetrics(app, s.metrics);
  app.register(healthRoutes(s));
  app.register(topicRoutes(s));
  app.register(produceRoutes(s));
  app.register(readRoutes(s));
  app.register(consumeRoutes(s));
  app.register(adminRoutes(s));
  return app;
}
