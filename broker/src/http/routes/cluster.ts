// The cluster API of Narad (Go) v1: members with their placement, the
// partition moves in flight, and decommission requests (core/decommission.ts
// decides what a request gets; on Kubernetes node/decommission.ts reads the
// NaradCluster and writes its scale). Reads come from the local metastore replica.

import type { FastifyInstance } from "fastify";
import { memberViews, sortedMoves } from "../../core/cluster-view.ts";
import {
  type DecommissionDecision,
  decideSingleNode,
  decideWithoutOperator,
} from "../../core/decommission.ts";
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
          "204 (as Narad v1). Kubernetes: POST for the highest in-service ordinal scales the NaradCluster down by one, " +
            "DELETE for the member being decommissioned scales it back up; 409 conflict for another member, the last one, " +
            "a completed removal or a concurrent change; 404 not_found for an unknown member. One node: POST 409, DELETE 204.",
        ).schema,
        params: memberParams,
      },
      handler: async (request, reply) => {
        const { id } = request.params;
        const cancel = request.method === "DELETE";
        const known = s.metastore.members().some((m) => m.id === id && m.state !== "Removed");
        // Kubernetes decides from a fresh read of the NaradCluster, not this replica.
        const d: DecommissionDecision =
          s.metastore.kind === "file"
            ? decideSingleNode(known, id, cancel)
            : s.decommissions !== undefined
              ? await s.decommissions.request(id, cancel)
              : decideWithoutOperator(known, id);
        if (d.kind === "refuse") throw new NaradError(refusalCode[d.status], d.error);
        return reply.code(204).send();
      },
    });
  };
}
