import { type FastifyInstance, fastify } from "fastify";
import type { OperatorMetrics } from "./metrics.ts";

export interface HealthSource {
  /** Liveness: the process is running its loops. */
  alive(): boolean;
  /** Readiness: informers synced (a non-leader is ready too). */
  ready(): { ready: boolean; detail: Record<string, boolean> };
}

/** /metrics, /healthz, /readyz (built, not listening: main.ts listens). */
export function buildHttp(metrics: OperatorMetrics, health: HealthSource): FastifyInstance {
  const app = fastify({ logger: false });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  app.get("/healthz", async (_req, reply) => {
    if (!health.alive()) return reply.code(503).send({ ok: false });
    return { ok: true };
  });
  app.get("/readyz", async (_req, reply) => {
    const r = health.ready();
    return reply.code(r.ready ? 200 : 503).send({ ready: r.ready, informers: r.detail });
  });
  return app;
}
