// POST /v1/producers: an idempotent producer's identity from the durable
// producer registry (producers/registry.ts). Body (optional JSON):
// {"name": "..."}; without a name a new id with epoch 0, with a name its
// stable id and the next epoch, which fences every earlier instance.
// {"name": "...", "epoch": N}: a producer re-initialising itself (its
// sequences were lost): bumped only while the name is still at epoch N, else
// 409 producer_fenced (a newer instance exists; the caller must stop).
// 201 {"producer_id": "...", "epoch": N}.

import type { FastifyInstance } from "fastify";
import { NaradError } from "../../errors.ts";
import { ProducerFencedError } from "../../producers/registry.ts";
import { maxRegistryEpoch, producerNamePattern } from "../../producers/registry-state.ts";
import type { BrokerServices } from "../../services.ts";
import { querySchema } from "../query-schema.ts";

export function producerRoutes(s: BrokerServices) {
  return async (app: FastifyInstance): Promise<void> => {
    const schema = {
      tags: ["produce"],
      summary: "Get an idempotent producer identity",
      description:
        'Body (JSON, optional): {"name": "..."} or {"name": "...", "epoch": N}; 201 {"producer_id": "...", "epoch": N}. 409 producer_fenced when a newer instance exists.',
      querystring: querySchema(),
    };
    app.post("/v1/producers", { schema }, async (request, reply) => {
      const registry = s.producerRegistry;
      if (registry === undefined) {
        return reply
          .code(503)
          .header("retry-after", "5")
          .send({ error: "this node has no producer registry", code: "registry_unavailable" });
      }
      const body = request.body ?? {};
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return reply.code(400).send({ error: "body must be a JSON object", code: "bad_request" });
      }
      const fields = body as Record<string, unknown>;
      for (const k of Object.keys(fields)) {
        if (k !== "name" && k !== "epoch")
          return reply.code(400).send({ error: `unknown field "${k}"`, code: "bad_request" });
      }
      const name = fields.name;
      if (name !== undefined && (typeof name !== "string" || !producerNamePattern.test(name))) {
        return reply
          .code(400)
          .send({ error: "name must be 1-128 chars of [A-Za-z0-9._-]", code: "bad_request" });
      }
      const epoch = fields.epoch;
      if (
        epoch !== undefined &&
        (name === undefined ||
          typeof epoch !== "number" ||
          !Number.isInteger(epoch) ||
          epoch < 0 ||
          epoch > maxRegistryEpoch)
      ) {
        return reply.code(400).send({
          error: `epoch must be an integer between 0 and ${maxRegistryEpoch}, and comes with a name`,
          code: "bad_request",
        });
      }
      let id: Awaited<ReturnType<typeof registry.init>>;
      try {
        id = await registry.init(name as string | undefined, epoch as number | undefined);
      } catch (err) {
        if (err instanceof ProducerFencedError)
          return reply.code(409).send({ error: err.message, code: "producer_fenced" });
        // The registry is full (--max-named-producers): a 409 naming the setting.
        if (err instanceof NaradError && err.code === "CONFLICT")
          s.metrics.limitRefusals.inc({ limit: "named_producers" });
        throw err;
      }
      return reply.code(201).send({ producer_id: id.id, epoch: id.epoch });
    });
  };
}
