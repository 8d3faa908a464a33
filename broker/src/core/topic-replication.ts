// A topic's replication settings as the HTTP API takes them: validated and
// defaulted at create with resolveReplicationSettings (ADR 0007), changed
// within their rules at PATCH, and shown with their effective values. Pure:
// returns values or throws a 400 NaradError with the setting's code.
//
// The gate: until the replicated data path is in, `--replication off` (the
// default) keeps every new topic at one copy and refuses a factor above 1.

import {
  DEFAULT_MIN_INSYNC_REPLICAS,
  MAX_REPLICATION_FACTOR,
  type ReplicationSettings,
  resolveReplicationSettings,
} from "../../../packages/api/src/v1alpha1/replication.ts";
import { coded } from "../errors.ts";
import type { Member, NewTopic, TopicConfig, TopicPatch } from "../meta/types.ts";

export interface ReplicationContext {
  /** `--replication on`: factors above 1 are accepted and the defaults of ADR 0007 apply. */
  enabled: boolean;
  /** Brokers that can hold replicas (replicaBrokers). */
  brokers: number;
}

/**
 * Brokers that can hold a replica: every member that is neither leaving
 * (Decommissioning) nor gone (Removed). Never below 1: the node answering
 * is a broker even before membership lists it.
 */
export function replicaBrokers(members: readonly Member[]): number {
  const n = members.filter((m) => m.state !== "Removed" && m.state !== "Decommissioning").length;
  return Math.max(1, n);
}

/** The settings in effect: absent is one copy (a topic from before replication, a single node). */
export function effectiveReplication(
  topic: Pick<TopicConfig, "replication_factor" | "min_insync_replicas">,
): ReplicationSettings {
  const replicationFactor = topic.replication_factor ?? 1;
  return {
    replicationFactor,
    minInsyncReplicas: topic.min_insync_replicas ?? Math.min(DEFAULT_MIN_INSYNC_REPLICAS, replicationFactor),
  };
}

/** A body field: absent and null both leave it to the default; anything else is checked by the resolver. */
function given(obj: Record<string, unknown>, field: string): number | undefined {
  const v = obj[field];
  if (v === undefined || v === null) return undefined;
  // A non-number fails the resolver's integer check with the field's own code.
  return typeof v === "number" ? v : Number.NaN;
}

/**
 * The replication fields of a new topic, always both set: the resolved
 * values are stored with the topic, so a later change of the cluster's size
 * (or of the gate) never changes a topic's factor.
 */
export function parseCreateReplication(
  obj: Record<string, unknown>,
  ctx: ReplicationContext,
): Required<Pick<NewTopic, "replication_factor" | "min_insync_replicas">> {
  const rf = given(obj, "replication_factor");
  const min = given(obj, "min_insync_replicas");
  // A valid factor above 1 is refused for the gate; an invalid one gets its own code below.
  if (!ctx.enabled && rf !== undefined && Number.isInteger(rf) && rf > 1 && rf <= MAX_REPLICATION_FACTOR) {
    throw coded(
      "BAD_REQUEST",
      "replication_not_enabled",
      `replication_factor ${rf}: replication is not enabled on this broker (start it with --replication on, NARAD_REPLICATION=on or "replication": "on" in its config file); topics have one copy until it is`,
    );
  }
  const r = resolveReplicationSettings({
    // Gate off: one copy whatever the cluster's size.
    ...(rf !== undefined ? { replicationFactor: rf } : ctx.enabled ? {} : { replicationFactor: 1 }),
    ...(min === undefined ? {} : { minInsyncReplicas: min }),
    brokers: ctx.brokers,
  });
  if (!r.ok) throw coded("BAD_REQUEST", r.code, r.message);
  return { replication_factor: r.replicationFactor, min_insync_replicas: r.minInsyncReplicas };
}

/**
 * The replication part of a PATCH: `replication_factor` is immutable (the
 * same value is accepted and changes nothing), `min_insync_replicas` may
 * move within 1..factor.
 */
export function parsePatchReplication(
  obj: Record<string, unknown>,
  current: Pick<TopicConfig, "replication_factor" | "min_insync_replicas">,
): Pick<TopicPatch, "min_insync_replicas"> {
  const now = effectiveReplication(current);
  if ("replication_factor" in obj && obj.replication_factor !== null) {
    const rf = obj.replication_factor;
    if (rf !== now.replicationFactor)
      throw coded(
        "BAD_REQUEST",
        "replication_factor_immutable",
        `replication_factor cannot be changed (the topic has ${now.replicationFactor}); create a new topic with the factor you need`,
      );
  }
  const min = given(obj, "min_insync_replicas");
  if (min === undefined) return {};
  const r = resolveReplicationSettings({
    replicationFactor: now.replicationFactor,
    minInsyncReplicas: min,
    // The factor is the topic's own: already placed, so the cluster's size does not matter here.
    brokers: now.replicationFactor,
  });
  if (!r.ok) throw coded("BAD_REQUEST", r.code, r.message);
  return { min_insync_replicas: r.minInsyncReplicas };
}
