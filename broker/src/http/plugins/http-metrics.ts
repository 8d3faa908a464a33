// Request count and latency per route template (never the raw URL, so topic
// names cannot explode label cardinality). The route label is Narad's shape,
// method and path with braces: `GET /v1/topics/{topic}`.

import type { FastifyInstance } from "fastify";
import type { BrokerMetrics } from "../../metrics.ts";

/** `/v1/topics/:topic/produce` → `/v1/topics/{topic}/produce`. */
export function routeLabel(method: string, template: string | undefined): string {
  if (template === undefined) return "unmatched";
  return `${method} ${template.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
}

export function registerHttpMetrics(app: FastifyInstance, metrics: BrokerMetrics): void {
  const labels = new Map<string, string>();
  app.addHook("onResponse", (request, reply, done) => {
    const key = `${request.method} ${request.routeOptions.url ?? ""}`;
    let route = labels.get(key);
    if (route === undefined) {
      route = routeLabel(request.method, request.routeOptions.url);
      labels.set(key, route);
    }
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
    done();
  });
}
