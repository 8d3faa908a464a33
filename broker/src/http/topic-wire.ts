// The topic as it goes over the wire: Narad (Go)'s shape, so typed clients
// written for Narad decode it. Internally the metastores keep `created_at` as
// an ISO-8601 string (a NaradTopic's creationTimestamp); Narad sends Unix
// seconds, and a Go client decoding into int64 fails on anything else.

import type { TopicConfig } from "../meta/types.ts";

export type TopicWire = Omit<TopicConfig, "created_at" | "schema"> & {
  /** Unix seconds, as Narad (Go). */
  created_at: number;
  /** Position in fan-out; every topic here is standalone (no fan-out children yet). */
  role: "standalone";
  /**
   * The JSON Schema document, as it was given to POST or PATCH, and its
   * version; both absent without one. Narad (Go) does not show the schema
   * here; its typed clients ignore the two fields.
   */
  schema?: unknown;
  schema_version?: number;
};

export function topicToWire(topic: TopicConfig): TopicWire {
  const ms = Date.parse(topic.created_at);
  const { schema, ...rest } = topic;
  return {
    ...rest,
    created_at: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000),
    role: "standalone",
    ...(schema === undefined
      ? {}
      : { schema: schemaDocument(schema.definition), schema_version: schema.version }),
  };
}

/** The stored JSON text as a document; text that is not JSON (a hand-written NaradTopic) is shown as is. */
function schemaDocument(definition: string): unknown {
  try {
    return JSON.parse(definition) as unknown;
  } catch {
    return definition;
  }
}
