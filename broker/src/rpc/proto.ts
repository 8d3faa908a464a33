// Loads proto/narad/v1/cluster.proto at runtime (no codegen) and states the
// TypeScript shapes of its messages as @grpc/proto-loader decodes them with
// the options below: snake_case field names, 64-bit integers as numbers
// (offsets and seqs stay below 2^53), bytes as Buffer, defaults filled in.

import { fileURLToPath } from "node:url";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

export const clusterProtoPath = fileURLToPath(
  new URL("../../../proto/narad/v1/cluster.proto", import.meta.url),
);

export type PbEmpty = Record<string, never>;

export interface PbCommitRecord {
  key: Buffer;
  created_ms: number;
  payload: Buffer;
  seq: number;
  /** null/undefined when absent (defaults leave message fields unset). */
  producer?: PbProducerStamp | null;
}

export interface PbCommitBatchRequest {
  topic: string;
  partition: number;
  incarnation: string;
  records: PbCommitRecord[];
  /** "" (proto3 default) when the caller predates topic uids. */
  topic_uid?: string;
}

export interface PbCommitBatchResponse {
  base_offset: number;
  appended: number;
  duplicates: number;
  fenced: number;
  out_of_order: number;
  outcomes: number[];
}

export interface PbProducerStamp {
  id: string;
  epoch: number;
  seq: number;
}

export interface PbReadRequest {
  topic: string;
  partition: number;
  offset: number;
  max_records: number;
  max_bytes: number;
}

export interface PbStoredRecord {
  offset: number;
  key: Buffer;
  commit_ms: number;
  created_ms: number;
  payload: Buffer;
  incarnation: string;
  seq: number;
  producer?: PbProducerStamp | null;
}

export interface PbReadResponse {
  records: PbStoredRecord[];
  high_watermark: number;
  oldest_offset: number;
}

export interface PbPartitionStatsRequest {
  topic: string;
  partition: number;
}

export interface PbPartitionStats {
  index: number;
  segments: number;
  oldest_offset: number;
  next_offset: number;
  high_watermark: number;
  size_bytes: number;
  /** Absent from peers that predate it; 0: the oldest segment holds no record. */
  oldest_segment_at_ms?: number;
}

export interface PbPartitionRef {
  topic: string;
  partition: number;
}

export interface PbAdminStatusResponse {
  node_id: string;
  ready: boolean;
  draining: boolean;
  wal_pending_records: number;
  checkpoint_seq: number;
  last_accepted_seq: number;
  owned_partitions: PbPartitionRef[];
}

export interface PbConsumeRequest {
  topic: string;
  partition: number;
  group: string;
  wait_ms: number;
}

export interface PbConsumeResponse {
  found: boolean;
  partition: number;
  /** null when found is false. */
  record: PbStoredRecord | null;
  receipt_handle: string;
}

export interface PbAckRequest {
  topic: string;
  group: string;
  receipt_handle: string;
  /** Absent: ack; true: extend; false: nack. */
  extend?: boolean;
}

export interface PbSeekGroupRequest {
  topic: string;
  partition: number;
  group: string;
  /** "earliest" | "latest" | "offset" */
  to: string;
  offset: number;
}

export interface PbSeekGroupResponse {
  previous: number;
  committed: number;
}

export interface PbGroupStatsResponse {
  high_watermark: number;
  groups: Array<{ name: string; committed: number; in_flight: number; acked_ahead: number }>;
}

export interface PbDeleteGroupRequest {
  topic: string;
  group: string;
}

export interface PbDeleteGroupResponse {
  existed: boolean;
}

export interface PbSegmentExtent {
  base: number;
  bytes: number;
}

export interface PbGroupFrontier {
  group: string;
  offset: number;
}

export interface PbMoveManifest {
  high_watermark: number;
  oldest_offset: number;
  segments: PbSegmentExtent[];
  frozen: boolean;
  frontiers: PbGroupFrontier[];
  /** Under a freeze: the source's highest committed seq per WAL incarnation ([] from older sources). */
  dedup_floor: PbIncarnationSeq[];
}

export interface PbIncarnationSeq {
  incarnation: string;
  seq: number;
}

export interface PbMoveFetchRequest {
  topic: string;
  partition: number;
  base: number;
  position: number;
  max_bytes: number;
}

export interface PbMoveFetchResponse {
  found: boolean;
  data: Buffer;
  crc32c: number;
}

export interface PbMoveFreezeRequest {
  topic: string;
  partition: number;
  token: string;
  ttl_ms: number;
  handoff?: boolean;
}

export interface PbMoveUnfreezeRequest {
  topic: string;
  partition: number;
  token: string;
}

export interface PbMoveVerifyRequest {
  topic: string;
  partition: number;
  segments: PbSegmentExtent[];
}

export interface PbSegmentChecksum {
  base: number;
  bytes: number;
  found: boolean;
  crc32c: number;
}

export interface PbMoveVerifyResponse {
  segments: PbSegmentChecksum[];
  high_watermark: number;
  oldest_offset: number;
}

export interface PbIngestRecord {
  topic: string;
  partition: number;
  key: Buffer;
  payload: Buffer;
  created_ms: number;
  topic_uid: string;
}

export interface PbIngestRequest {
  records: PbIngestRecord[];
  from_node: string;
}

export interface PbIngestResponse {
  appended: number;
}

export interface PbConfirmProducerEpochRequest {
  producer_id: string;
  epoch: number;
  from_node: string;
}

export interface PbConfirmProducerEpochResponse {
  epoch: number;
  membership_epoch: number;
}

export type ReplicaErrorCode =
  | ""
  | "fenced_leader_epoch"
  | "unknown_leader_epoch"
  | "not_leader"
  | "offset_out_of_range"
  | "unknown_topic";

export interface PbReplicaFetchRequest {
  topic: string;
  partition: number;
  fetch_offset: number;
  leader_epoch: number;
  max_bytes: number;
  max_wait_ms: number;
  replica_id: string;
  /** The follower's volume identity (uuid); "" from a follower that predates it. */
  replica_volume_id: string;
}

export interface PbReplicaFetchResponse {
  /** A ReplicaErrorCode (a string on the wire). */
  error: string;
  message: string;
  frames: Buffer;
  leader_hwm: number;
  leader_epoch: number;
  log_start_offset: number;
  log_end_offset: number;
  epoch_starts: Array<{ epoch: number; start_offset: number }>;
  /** The leader's durable group frontiers of the partition (empty when unchanged since the follower's last answer). */
  frontiers: Array<{ group: string; offset: number }>;
  /** The leader's fan-out cursor files of the partition that changed since the follower's last answer. */
  fanout_cursors: Array<{ file: string; epoch: string; next_offset: number }>;
}

export interface PbOffsetForLeaderEpochRequest {
  topic: string;
  partition: number;
  epoch: number;
  leader_epoch: number;
}

export interface PbOffsetForLeaderEpochResponse {
  error: string;
  message: string;
  epoch: number;
  end_offset: number;
  leader_epoch: number;
}

/** Request and response type of each method of the Cluster service. */
export interface ClusterMethods {
  CommitBatch: { req: PbCommitBatchRequest; res: PbCommitBatchResponse };
  Read: { req: PbReadRequest; res: PbReadResponse };
  Stats: { req: PbPartitionStatsRequest; res: PbPartitionStats };
  AdminStatus: { req: PbEmpty; res: PbAdminStatusResponse };
  Consume: { req: PbConsumeRequest; res: PbConsumeResponse };
  Ack: { req: PbAckRequest; res: PbEmpty };
  SeekGroup: { req: PbSeekGroupRequest; res: PbSeekGroupResponse };
  GroupStats: { req: PbPartitionRef; res: PbGroupStatsResponse };
  DeleteGroup: { req: PbDeleteGroupRequest; res: PbDeleteGroupResponse };
  MoveManifest: { req: PbPartitionRef; res: PbMoveManifest };
  MoveFetch: { req: PbMoveFetchRequest; res: PbMoveFetchResponse };
  MoveFreeze: { req: PbMoveFreezeRequest; res: PbMoveManifest };
  MoveUnfreeze: { req: PbMoveUnfreezeRequest; res: PbEmpty };
  MoveVerify: { req: PbMoveVerifyRequest; res: PbMoveVerifyResponse };
  Ingest: { req: PbIngestRequest; res: PbIngestResponse };
  ConfirmProducerEpoch: { req: PbConfirmProducerEpochRequest; res: PbConfirmProducerEpochResponse };
  ReplicaFetch: { req: PbReplicaFetchRequest; res: PbReplicaFetchResponse };
  OffsetForLeaderEpoch: { req: PbOffsetForLeaderEpochRequest; res: PbOffsetForLeaderEpochResponse };
}
export type ClusterMethod = keyof ClusterMethods;

export type ClusterMethodDefinition<M extends ClusterMethod> = MethodDefinition<
  ClusterMethods[M]["req"],
  ClusterMethods[M]["res"]
>;

export type ClusterServiceDefinition = { [M in ClusterMethod]: ClusterMethodDefinition<M> };

let loaded: ClusterServiceDefinition | undefined;

/** The Cluster service definition (serializers and paths per method), loaded once. */
export function clusterService(): ClusterServiceDefinition {
  if (loaded === undefined) {
    const pkg = loadSync(clusterProtoPath, {
      keepCase: true,
      longs: Number,
      bytes: Buffer,
      enums: String,
      defaults: true,
      arrays: true,
    });
    const def = pkg["narad.v1.Cluster"] as ServiceDefinition | undefined;
    if (def === undefined) throw new Error(`narad.v1.Cluster not found in ${clusterProtoPath}`);
    loaded = def as unknown as ClusterServiceDefinition;
  }
  return loaded;
}
