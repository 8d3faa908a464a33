// /healthz (process is up), /readyz (recovered and not draining), /metrics.

import type { FastifyInstance } from "fastify";
import { errorBody } from "../../api-errors.ts";
import { memberStates } from "../../metrics.ts";
import type { BrokerServices } from "../../services.ts";

export function healthRoutes(s: BrokerServices) {
  return async (app: FastifyInstance): Promise<void> => {
    const doc = (summary: string, description: string) => ({
      schema: { tags: ["health"], summary, description },
    });
    app.get("/healthz", doc("Liveness", '200 {"status": "ok"} while the process runs.'), async () => ({
      status: "ok",
    }));
    app.get(
      "/readyz",
      doc("Readiness", '200 {"status": "ready"} once recovered; 503 not_ready while starting or draining.'),
      async (_request, reply) => {
        if (s.lifecycle.ready()) return { status: "ready" };
        const status = s.lifecycle.draining() ? "draining" : "starting";
        return reply
          .code(503)
          .header("retry-after", "1")
          .send(errorBody("not_ready", `not ready: ${status}`));
      },
    );
    app.get("/metrics", doc("Prometheus metrics", "Text exposition format."), async (_request, reply) => {
      const wal = s.ingress.stats();
      s.metrics.walPendingRecords.set(wal.pendingRecords);
      s.metrics.walDiskBytes.set(wal.diskBytes);
      s.metrics.walCorruptFrames.set(wal.corruptFrames);
      s.metrics.ready.set(s.lifecycle.ready() ? 1 : 0);
      const members = s.metastore.members();
      for (const state of memberStates)
        s.metrics.clusterMembers.set({ state }, members.filter((m) => m.state === state).length);
      return reply.type(s.metrics.registry.contentType).send(await s.metrics.registry.metrics());
    });
  };
}
