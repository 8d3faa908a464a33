// A topic's replication settings in effect (ADR 0007). Pure.

import { resolveReplicationSettings } from "../../../packages/api/src/v1alpha1/replication.ts";
import type { TopicConfig } from "../meta/types.ts";

/**
 * The factor and min_insync_replicas a topic runs with. Absent fields: a
 * single-copy topic (created before replication, or on one node); an
 * absent minimum is min(2, factor).
 */
export function topicReplication(t: Pick<TopicConfig, "replication_factor" | "min_insync_replicas">): {
  factor: number;
  minInsync: number;
} {
  const factor = t.replication_factor ?? 1;
  const r = resolveReplicationSettings({
    replicationFactor: factor,
    ...(t.min_insync_replicas !== undefined ? { minInsyncReplicas: t.min_insync_replicas } : {}),
    brokers: factor,
  });
  return r.ok ? { factor, minInsync: r.minInsyncReplicas } : { factor, minInsync: Math.min(2, factor) };
}
