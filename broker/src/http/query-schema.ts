// Query parameters as a route's fastify `schema.querystring`: one source for
// validation (a parameter the route does not know is refused, so a typo such
// as `?kye=a` cannot store a record without its key) and for the OpenAPI
// document. Values stay strings: the handlers parse them (http/params.ts) with
// the messages Narad v1 clients know.

import type { FastifyInstance, FastifyRequest, FastifySchemaValidationError } from "fastify";
import { coded, type NaradError } from "../errors.ts";
import { nearMissOf } from "./query-typos.ts";

export interface QuerySchema {
  type: "object";
  additionalProperties: false;
  properties: Record<string, { type: "string"; description: string }>;
}

/** The schema of a route's query string: each parameter with a one-line description. */
export function querySchema(params: Readonly<Record<string, string>> = {}): QuerySchema {
  const properties: QuerySchema["properties"] = {};
  for (const [name, description] of Object.entries(params))
    properties[name] = { type: "string", description };
  return { type: "object", additionalProperties: false, properties };
}

function knownParams(request: FastifyRequest): string[] {
  const schema = request.routeOptions.schema?.querystring as Partial<QuerySchema> | undefined;
  return Object.keys(schema?.properties ?? {});
}

/** 400 unknown_query_parameter / invalid_query_parameter for a query string its schema refused. */
export function queryValidationError(
  errors: readonly FastifySchemaValidationError[],
  request: FastifyRequest,
): NaradError {
  const first = errors[0];
  const extra = first?.params.additionalProperty;
  if (first?.keyword === "additionalProperties" && typeof extra === "string") {
    const known = knownParams(request);
    const takes = known.length === 0 ? "takes none" : `takes: ${known.join(", ")}`;
    return coded(
      "BAD_REQUEST",
      "unknown_query_parameter",
      `unknown query parameter ${JSON.stringify(extra)} (this route ${takes})`,
    );
  }
  const where = first?.instancePath.replace(/^\//, "") ?? "";
  return coded(
    "BAD_REQUEST",
    "invalid_query_parameter",
    `query parameter ${where === "" ? "" : `${JSON.stringify(where)} `}${first?.message ?? "is invalid"}`,
  );
}

/**
 * --unknown-query-params typos: before validation (which then drops every
 * parameter the route does not know), refuse one that is a near miss of a
 * known name (query-typos.ts), naming the name it probably meant.
 */
export function refuseQueryTypos(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => {
    const query = request.query as Record<string, unknown> | undefined;
    if (query === undefined || request.routeOptions.schema?.querystring === undefined) return;
    const known = knownParams(request);
    for (const name of Object.keys(query)) {
      if (known.includes(name)) continue;
      const meant = nearMissOf(name, known);
      if (meant === undefined) continue;
      throw coded(
        "BAD_REQUEST",
        "unknown_query_parameter",
        `unknown query parameter ${JSON.stringify(name)}: did you mean ${JSON.stringify(meant)}? (this route takes: ${known.join(", ")})`,
      );
    }
  });
}

/** Path parameters, for the OpenAPI document (fastify matches them; handlers validate them). */
export function pathSchema(params: Readonly<Record<string, string>>) {
  const properties: Record<string, { type: "string"; description: string }> = {};
  for (const [name, description] of Object.entries(params))
    properties[name] = { type: "string", description };
  return { type: "object", properties, required: Object.keys(params) } as const;
}

export const topicParams = pathSchema({ topic: "topic name" });
export const childParams = pathSchema({ topic: "parent topic name", child: "child topic name" });
export const groupParams = pathSchema({ topic: "topic name", group: "consumer group name" });
export const moveParams = pathSchema({ topic: "topic name", partition: "partition index" });
export const memberParams = pathSchema({ id: "member (node) id" });
