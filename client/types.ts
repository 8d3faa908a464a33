// Shapes the client returns (camelCase) and their conversion from the
// broker's JSON (snake_case).

export interface TopicSettings {
  partitions?: number;
  retentionMs?: number;
  retentionBytes?: number;
  visibilityTimeoutMs?: number;
  maxInFlightPerPartition?: number;
  maxAckedAheadPerPartition?: number;
  /** Copies of each partition, fixed at creation (the broker's default when absent). */
  replicationFactor?: number;
  /** Copies an acks=all record needs; 1 to the factor. */
  minInsyncReplicas?: number;
}

export type TopicPatch = Omit<TopicSettings, "visibilityTimeoutMs" | "replicationFactor">;

export interface Topic {
  name: string;
  partitions: number;
  retentionMs: number;
  retentionBytes: number;
  visibilityTimeoutMs: number;
  maxInFlightPerPartition: number;
  maxAckedAheadPerPartition: number;
  /** The settings in effect (1 from a broker that does not report them). */
  replicationFactor: number;
  minInsyncReplicas: number;
  /** ISO-8601 creation time (the wire carries Unix seconds, as Narad does). */
  createdAt: string;
}

export interface PartitionStats {
  index: number;
  segments: number;
  oldestOffset: number;
  nextOffset: number;
  highWatermark: number;
  sizeBytes: number;
  ownerNode: string | undefined;
  /** Replicated partitions only (all four, else none): the leader, null while offline. */
  leader?: string | null;
  /** Every replica (member ids), the preferred leader first. */
  replicas?: string[];
  /** The in-sync replicas (member ids). */
  isr?: string[];
  leaderEpoch?: number;
}

export interface TopicInfo extends Topic {
  partitionStats: PartitionStats[];
}

export interface Message {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  /** Commit time in ms since the epoch. */
  timestampMs: number;
  /** The stored bytes as the broker renders them: parsed JSON, a string for UTF-8 text, a Buffer otherwise. */
  payload: unknown;
}

export interface ReadResult {
  records: Message[];
  nextOffset: number;
  highWatermark: number;
}

export interface NodeStatus {
  nodeId: string;
  ready: boolean;
  draining: boolean;
  drained: boolean;
  wal: {
    incarnation: string;
    pendingRecords: number;
    checkpoint: number;
    nextSeq: number;
    segments: number;
    diskBytes: number;
    corruptFrames: number;
    poisoned: boolean;
  };
}

export interface GroupInfo {
  name: string;
  lag: number;
  partitions: Array<{
    partition: number;
    committed: number;
    inFlight: number;
    ackedAhead: number;
    lag: number;
  }>;
}

/**
 * Where groupSeek moves a group: the oldest retained record or the end of
 * each partition (all, or one), or an offset in one partition.
 */
export type GroupSeekTarget =
  | { to: "earliest" | "latest"; partition?: number }
  | { offset: number; partition: number };

/** A seek's outcome per partition moved: the committed offset before and after. */
export interface GroupSeekResult {
  topic: string;
  group: string;
  partitions: Array<{ partition: number; previous: number; committed: number }>;
}

type Json = Record<string, unknown>;

export function settingsJson(s: TopicSettings): Json {
  const out: Json = {};
  if (s.partitions !== undefined) out.partitions = s.partitions;
  if (s.retentionMs !== undefined) out.retention_ms = s.retentionMs;
  if (s.retentionBytes !== undefined) out.retention_bytes = s.retentionBytes;
  if (s.visibilityTimeoutMs !== undefined) out.visibility_timeout_ms = s.visibilityTimeoutMs;
  if (s.maxInFlightPerPartition !== undefined) out.max_in_flight_per_partition = s.maxInFlightPerPartition;
  if (s.maxAckedAheadPerPartition !== undefined)
    out.max_acked_ahead_per_partition = s.maxAckedAheadPerPartition;
  if (s.replicationFactor !== undefined) out.replication_factor = s.replicationFactor;
  if (s.minInsyncReplicas !== undefined) out.min_insync_replicas = s.minInsyncReplicas;
  return out;
}

/** Unix seconds (Narad's wire shape) or an ISO string (older brokers of this project). */
function createdAtFromJson(v: unknown): string {
  if (typeof v === "number") return new Date(v * 1000).toISOString();
  return typeof v === "string" ? v : "";
}

export function topicFromJson(j: Json): Topic {
  return {
    name: j.name as string,
    partitions: j.partitions as number,
    retentionMs: j.retention_ms as number,
    retentionBytes: j.retention_bytes as number,
    visibilityTimeoutMs: j.visibility_timeout_ms as number,
    maxInFlightPerPartition: j.max_in_flight_per_partition as number,
    maxAckedAheadPerPartition: j.max_acked_ahead_per_partition as number,
    replicationFactor: typeof j.replication_factor === "number" ? j.replication_factor : 1,
    minInsyncReplicas: typeof j.min_insync_replicas === "number" ? j.min_insync_replicas : 1,
    createdAt: createdAtFromJson(j.created_at),
  };
}

export function topicInfoFromJson(j: Json): TopicInfo {
  const stats = (j.partition_stats as Json[] | undefined) ?? [];
  return {
    ...topicFromJson(j),
    partitionStats: stats.map((p) => ({
      index: p.index as number,
      segments: p.segments as number,
      oldestOffset: p.oldest_offset as number,
      nextOffset: p.next_offset as number,
      highWatermark: p.high_watermark as number,
      sizeBytes: p.size_bytes as number,
      ownerNode: (p.owner_node as string | null | undefined) ?? undefined,
      ...(Array.isArray(p.replicas)
        ? {
            leader: typeof p.leader === "string" ? p.leader : null,
            replicas: p.replicas as string[],
            isr: Array.isArray(p.isr) ? (p.isr as string[]) : [],
            leaderEpoch: typeof p.leader_epoch === "number" ? p.leader_epoch : 0,
          }
        : {}),
    })),
  };
}

export function messageFromJson(j: Json): Message {
  const payload =
    j.payload_encoding === "base64" && typeof j.payload === "string"
      ? Buffer.from(j.payload, "base64")
      : j.payload;
  return {
    topic: j.topic as string,
    partition: j.partition as number,
    offset: j.offset as number,
    key: j.key as string,
    timestampMs: j.timestamp_ms as number,
    payload,
  };
}

export function groupSeekFromJson(j: Json): GroupSeekResult {
  return {
    topic: j.topic as string,
    group: j.name as string,
    partitions: ((j.partitions as Json[]) ?? []).map((p) => ({
      partition: p.partition as number,
      previous: p.previous as number,
      committed: p.committed as number,
    })),
  };
}

export function groupFromJson(j: Json): GroupInfo {
  return {
    name: j.name as string,
    lag: j.lag as number,
    partitions: ((j.partitions as Json[]) ?? []).map((p) => ({
      partition: p.partition as number,
      committed: p.committed as number,
      inFlight: p.in_flight as number,
      ackedAhead: p.acked_ahead as number,
      lag: p.lag as number,
    })),
  };
}

/** A payload as bytes: Uint8Array as is, strings as UTF-8, anything else as JSON. */
export function payloadBytes(payload: unknown): Buffer {
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array)
    return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  if (payload === undefined) throw new TypeError("payload is required");
  return Buffer.from(JSON.stringify(payload), "utf8");
}
