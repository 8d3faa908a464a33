// The topic as it goes over the wire: Narad (Go)'s shape, so typed clients
// written for Narad decode it. Internally the metastores keep `created_at` as
// an ISO-8601 string (a NaradTopic's creationTimestamp); Narad sends Unix
// seconds, and a Go client decoding into int64 fails on anything else.

import { effectiveReplication } from "../core/topic-replication.ts";
import { childrenOf, type Role, roleOf } from "../fanout/rules.ts";
import type { TopicConfig } from "../meta/types.ts";

export type TopicWire = Omit<
  TopicConfig,
  "created_at" | "schema" | "attached_at_ms" | "replication_factor" | "min_insync_replicas"
> & {
  /** Unix seconds, as Narad (Go). */
  created_at: number;
  /** The values in effect: a topic stored without them has one copy. */
  replication_factor: number;
  min_insync_replicas: number;
  /** Position in fan-out (fanout/rules.ts): standalone, parent (has children) or child (has a parent). */
  role: Role;
  /** A parent's children, in attach order; absent otherwise (as Narad's omitempty). */
  children?: string[];
  /**
   * The JSON Schema document, as it was given to POST or PATCH, and its
   * version; both absent without one. Narad (Go) does not show the schema
   * here; its typed clients ignore the two fields.
   */
  schema?: unknown;
  schema_version?: number;
};

/** `topics`: every topic (the metastore's list), which the role and children are derived from. */
export function topicToWire(topic: TopicConfig, topics: readonly TopicConfig[]): TopicWire {
  const ms = Date.parse(topic.created_at);
  // attached_at_ms is the engine's (where a cursor without a file starts); Narad shows no such field.
  const { schema, attached_at_ms: _attachedAt, ...rest } = topic;
  const role = roleOf(topic, topics);
  const replication = effectiveReplication(topic);
  return {
    ...rest,
    created_at: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000),
    replication_factor: replication.replicationFactor,
    min_insync_replicas: replication.minInsyncReplicas,
    role,
    ...(role === "parent" ? { children: childrenOf(topics, topic.name).map((c) => c.name) } : {}),
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
