// Request count and latency per route template (never the raw URL, so topic
// names cannot explode label cardinality).

import type { FastifyInstance } from "fastify";
import type { BrokerMetrics } from "../../metrics.ts";

export function registerHttpMetrics(app: FastifyInstance, metrics: BrokerMetrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? "unmatched";
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
    done();
  });
}
