// Replication settings and the replicated partition record, shared by the
// broker (API validation, the data path) and the operator (placement,
// election). Design: docs/adr/0007-replication.md. Pure: no I/O.

export const MIN_REPLICATION_FACTOR = 1;
export const MAX_REPLICATION_FACTOR = 5;
/** The default factor is 3 once the cluster has this many brokers, else 1. */
export const DEFAULT_REPLICATION_FACTOR = 3;
export const DEFAULT_MIN_INSYNC_REPLICAS = 2;

/**
 * One in-sync replica as recorded: the member and the volume it held when
 * it joined the ISR. A member that comes back on another volume (lost or
 * foreign disk) no longer matches its entry, so it is not in sync although
 * its name is still listed: it can neither be elected nor count for the HWM.
 */
export interface IsrMember {
  member: string;
  volumeId: string;
}

/** `NaradTopic.status.assignments[p]` once replicated (owner = leader for old readers). */
export interface ReplicaAssignment {
  partition: number;
  /** null while the partition is offline (no live in-sync replica). */
  leader: string | null;
  /** Preferred order: the first is the preferred leader. */
  replicas: string[];
  isr: IsrMember[];
  leaderEpoch: number;
}

export interface ReplicationSettingsInput {
  replicationFactor?: number;
  minInsyncReplicas?: number;
  /** Brokers in the cluster (members that may hold replicas). */
  brokers: number;
}

export interface ReplicationSettings {
  replicationFactor: number;
  minInsyncReplicas: number;
}

export type ReplicationSettingsError =
  | "invalid_replication_factor"
  | "replication_factor_above_brokers"
  | "invalid_min_insync_replicas";

export type ReplicationSettingsResult =
  | ({ ok: true } & ReplicationSettings)
  | { ok: false; code: ReplicationSettingsError; message: string };

/** Validates and defaults a topic's replication settings (ADR 0007 "Settings and placement"). */
export function resolveReplicationSettings(input: ReplicationSettingsInput): ReplicationSettingsResult {
  const brokers = Math.max(0, Math.floor(input.brokers));
  const rf =
    input.replicationFactor ?? (brokers >= DEFAULT_REPLICATION_FACTOR ? DEFAULT_REPLICATION_FACTOR : 1);
  if (!Number.isInteger(rf) || rf < MIN_REPLICATION_FACTOR || rf > MAX_REPLICATION_FACTOR) {
    return {
      ok: false,
      code: "invalid_replication_factor",
      message: `replication_factor must be an integer from ${MIN_REPLICATION_FACTOR} to ${MAX_REPLICATION_FACTOR}, got ${rf}`,
    };
  }
  // Replicas land on distinct brokers, so a factor above the cluster size
  // could never be placed: refuse it rather than create a topic that is
  // under-replicated from its first record.
  if (rf > brokers) {
    return {
      ok: false,
      code: "replication_factor_above_brokers",
      message: `replication_factor ${rf} needs at least ${rf} brokers, the cluster has ${brokers}`,
    };
  }
  const min = input.minInsyncReplicas ?? Math.min(DEFAULT_MIN_INSYNC_REPLICAS, rf);
  if (!Number.isInteger(min) || min < 1 || min > rf) {
    return {
      ok: false,
      code: "invalid_min_insync_replicas",
      message: `min_insync_replicas must be an integer from 1 to replication_factor (${rf}), got ${min}`,
    };
  }
  return { ok: true, replicationFactor: rf, minInsyncReplicas: min };
}
