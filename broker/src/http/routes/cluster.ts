// The cluster API of Narad (Go) v1: members with their placement, the
// partition moves in flight, and decommission requests (core/cluster-view.ts
// decides what a request gets). Reads come from the local metastore replica.

import type { FastifyInstance } from "fastify";
import { decideDecommission, memberViews, sortedMoves } from "../../core/cluster-view.ts";
import { NaradError } from "../../errors.ts";
import type { BrokerServices } from "../../services.ts";
import { memberParams, querySchema } from "../query-schema.ts";

const refusalCode = { 404: "NOT_FOUND", 409: "CONFLICT", 501: "NOT_IMPLEMENTED" } as const;

export function clusterRoutes(s: BrokerServices) {
  const moves = () => s.metastore.moves?.() ?? [];
  return async (app: FastifyInstance): Promise<void> => {
    const doc = (summary: string, description: string) => ({
      schema: { tags: ["cluster"], summary, description, querystring: querySchema() },
    });
    app.get(
      "/v1/cluster/members",
      doc("Cluster members", "Each member with its state and the partitions it owns."),
      async () => ({
        members: memberViews(
          s.metastore.members(),
          s.metastore.listTopics(),
          (t, p) => s.metastore.ownerOf(t, p),
          moves(),
        ),
      }),
    );

    app.get(
      "/v1/cluster/moves",
      doc("Partition moves in flight", "Sorted by topic and partition."),
      async () => ({
        moves: sortedMoves(moves()),
      }),
    );

    app.route<{ Params: { id: string } }>({
      method: ["POST", "DELETE"],
      url: "/v1/cluster/members/:id/decommission",
      schema: {
        ...doc(
          "Decommission a member (POST) or cancel it (DELETE)",
          "204; 404 not_found for an unknown member, 409 conflict for the only member, 501 not_implemented on a single node.",
        ).schema,
        params: memberParams,
      },
      handler: async (request, reply) => {
        const mode = s.metastore.kind === "file" ? "single" : "kubernetes";
        const cancel = request.method === "DELETE";
        const d = decideDecommission(mode, s.metastore.members(), request.params.id, cancel);
        if (d.kind === "refuse") throw new NaradError(refusalCode[d.status], d.error);
        return reply.code(204).send();
      },
    });
  };
}
