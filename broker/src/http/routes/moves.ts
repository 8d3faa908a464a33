// Partition moves, destination side (moves/destination.ts), for the
// operator's scale-down and rebalance: PUT starts (idempotent), GET reports,
// DELETE cancels. Authenticated as admin like every /admin/v1 route.

import type { FastifyInstance } from "fastify";
import { validTopicName } from "../../core/topic-spec.ts";
import { badRequest, NaradError, notFound } from "../../errors.ts";
import type { BrokerServices, MoveService } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { moveParams, querySchema } from "../query-schema.ts";

interface MoveParams {
  topic: string;
  partition: string;
}

export function moveRoutes(s: BrokerServices, moves: MoveService | undefined) {
  const target = (p: MoveParams): { topic: string; partition: number } => {
    if (!validTopicName(p.topic, s.config.topicDefaults.namePattern)) throw badRequest("invalid topic name");
    const partition = parseOptionalInt(p.partition, "partition", 0, 99_999, "path");
    if (partition === undefined) throw badRequest("partition must be an integer");
    return { topic: p.topic, partition };
  };
  const service = (): MoveService => {
    if (moves === undefined)
      throw new NaradError("BAD_REQUEST", "partition moves need cluster mode (this node runs alone)");
    return moves;
  };

  return async (app: FastifyInstance): Promise<void> => {
    const doc = (summary: string, description: string) => ({
      schema: { tags: ["admin"], summary, description, params: moveParams, querystring: querySchema() },
    });
    app.get(
      "/admin/v1/moves",
      {
        schema: {
          tags: ["admin"],
          summary: "Partition moves to this node",
          description: "Every move this node is the destination of, with its state.",
          querystring: querySchema(),
        },
      },
      async () => ({ moves: service().list() }),
    );

    app.put<{ Params: MoveParams; Body: unknown }>(
      "/admin/v1/moves/:topic/:partition",
      doc(
        "Start moving a partition here",
        'Body (JSON): {"from": "<source node id>"}; idempotent; 202 with the move.',
      ),
      async (request, reply) => {
        const { topic, partition } = target(request.params);
        const body = request.body;
        if (typeof body !== "object" || body === null || Array.isArray(body))
          throw badRequest('body must be a JSON object {"from": "<source node id>"}');
        const from = (body as { from?: unknown }).from;
        if (typeof from !== "string" || from.length === 0 || from.length > 253)
          throw badRequest('"from" must be the source node id (a non-empty string)');
        const st = await service().start(topic, partition, from);
        return reply.code(202).send(st);
      },
    );

    app.get<{ Params: MoveParams }>(
      "/admin/v1/moves/:topic/:partition",
      doc("A partition move's state", "404 not_found when no move of it is known here."),
      async (request) => {
        const { topic, partition } = target(request.params);
        const st = service().get(topic, partition);
        if (st === undefined) throw notFound(`no move of ${topic}/${partition} is known here`);
        return st;
      },
    );

    app.delete<{ Params: MoveParams }>(
      "/admin/v1/moves/:topic/:partition",
      doc("Cancel a partition move", "409 conflict once the owner swap happened."),
      async (request) => {
        const { topic, partition } = target(request.params);
        return service().cancel(topic, partition);
      },
    );
  };
}
