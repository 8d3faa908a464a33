// Peer clients: one gRPC channel per peer cluster address, created on first
// use and reused by every call (commits, reads, stats); keepalive pings
// detect a dead connection between calls. Each call carries a deadline
// (commits: the dispatcher's; others: rpcReadTimeoutMs). Failures surface as
// NaradError (rpc/status.ts) so callers can answer HTTP directly.

import { type ChannelCredentials, Client, credentials, type Interceptor, Metadata } from "@grpc/grpc-js";
import type { CommitRecord } from "../core/records.ts";
import { clusterAddressOf, type MemberView } from "../core/routing.ts";
import type { NaradError } from "../errors.ts";
import type { CommitResult } from "../log/types.ts";
import { fromCommitResponse, mergeCommitResults, toCommitRequests } from "./codec.ts";
import { defaultDeadlineInterceptor, metricsInterceptor } from "./interceptors.ts";
import type { RpcMetrics } from "./metrics.ts";
import {
  type ClusterMethod,
  type ClusterMethods,
  clusterService,
  type PbAckRequest,
  type PbAdminStatusResponse,
  type PbConfirmProducerEpochRequest,
  type PbConfirmProducerEpochResponse,
  type PbConsumeRequest,
  type PbConsumeResponse,
  type PbDeleteGroupRequest,
  type PbDeleteGroupResponse,
  type PbGroupStatsResponse,
  type PbIngestRequest,
  type PbMoveFetchRequest,
  type PbMoveFetchResponse,
  type PbMoveFreezeRequest,
  type PbMoveManifest,
  type PbMoveUnfreezeRequest,
  type PbMoveVerifyRequest,
  type PbMoveVerifyResponse,
  type PbOffsetForLeaderEpochRequest,
  type PbOffsetForLeaderEpochResponse,
  type PbPartitionStats,
  type PbReadRequest,
  type PbReadResponse,
  type PbReplicaFetchRequest,
  type PbReplicaFetchResponse,
  type PbSeekGroupRequest,
  type PbSeekGroupResponse,
} from "./proto.ts";
import { fromRpcError, PartialCommitError } from "./status.ts";

export interface PeerPoolOptions {
  maxMessageBytes: number;
  commitRequestBytes: number;
  readTimeoutMs: number;
  defaultDeadlineMs: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  reconnectBackoffInitialMs: number;
  reconnectBackoffMaxMs: number;
  flowControlWindowBytes: number;
  retryAfterSeconds: number;
  metrics?: RpcMetrics;
  nowMs?: () => number;
  /** More client interceptors, run after the built-in ones (e.g. the cluster-auth metadata). */
  interceptors?: Interceptor[];
  /** TLS (rpc/tls.ts); insecure when absent. */
  credentials?: ChannelCredentials;
}

export interface PeerClient {
  readonly address: string;
  /**
   * Commits records on the peer, split into requests of at most
   * commitRequestBytes sent one after another (seq order is kept: a later
   * request is sent only after the earlier one was acknowledged). A failure
   * part-way rejects; the dispatcher re-sends the whole batch and the owner
   * drops what already landed as duplicates.
   */
  commit(
    topic: string,
    partition: number,
    records: readonly CommitRecord[],
    deadlineMs: number,
  ): Promise<CommitResult>;
  read(req: PbReadRequest): Promise<PbReadResponse>;
  stats(topic: string, partition: number): Promise<PbPartitionStats>;
  adminStatus(): Promise<PbAdminStatusResponse>;
  /**
   * Queue consume at the owner; the deadline is wait_ms + readTimeoutMs. An
   * aborted signal cancels the call (the owner stops its long-poll).
   */
  consume(req: PbConsumeRequest, signal?: AbortSignal): Promise<PbConsumeResponse>;
  /** Ack / extend / nack at the owner of the handle's partition. */
  ack(req: PbAckRequest): Promise<void>;
  /** Moves a group's committed offset at the partition's owner (resolves after its fsync). */
  seekGroup(req: PbSeekGroupRequest): Promise<PbSeekGroupResponse>;
  /** The groups with state in one partition, at its owner. */
  groupStats(topic: string, partition: number): Promise<PbGroupStatsResponse>;
  /** Forgets a group's state on the peer (every partition it owns). */
  deleteGroup(req: PbDeleteGroupRequest): Promise<PbDeleteGroupResponse>;
  /** Partition moves (moves/runner.ts), called on the source. */
  moveManifest(topic: string, partition: number): Promise<PbMoveManifest>;
  moveFetch(req: PbMoveFetchRequest): Promise<PbMoveFetchResponse>;
  moveFreeze(req: PbMoveFreezeRequest): Promise<PbMoveManifest>;
  moveUnfreeze(req: PbMoveUnfreezeRequest): Promise<void>;
  /** CRC-32C of segment prefixes of the node's copy (moves/checksum.ts). */
  moveVerify(req: PbMoveVerifyRequest): Promise<PbMoveVerifyResponse>;
  /** Replication: a follower's long poll for raw frames (deadline: max_wait_ms + readTimeoutMs). */
  replicaFetch(req: PbReplicaFetchRequest, signal?: AbortSignal): Promise<PbReplicaFetchResponse>;
  offsetForLeaderEpoch(req: PbOffsetForLeaderEpochRequest): Promise<PbOffsetForLeaderEpochResponse>;
  /** Produce forwarded to this peer's WAL; resolves once the peer fsynced every record. */
  ingest(req: PbIngestRequest, deadlineMs: number): Promise<number>;
  /** The re-init barrier: the peer holds (producer id, epoch) in its registry view once this resolves. */
  confirmProducerEpoch(
    req: PbConfirmProducerEpochRequest,
    deadlineMs: number,
  ): Promise<PbConfirmProducerEpochResponse>;
}

export interface PeerPool {
  peer(address: string): PeerClient;
  /** Closes the channels of addresses not in `keep` (peers that left the membership). */
  retain(keep: ReadonlySet<string>): void;
  /** Closes the channel to one address (the next call opens a fresh one, with no reconnect backoff). */
  forget(address: string): void;
  /** Addresses with an open channel. */
  addresses(): string[];
  close(): void;
}

export function createPeerPool(o: PeerPoolOptions): PeerPool {
  const service = clusterService();
  const nowMs = o.nowMs ?? Date.now;
  const interceptors: Interceptor[] = [defaultDeadlineInterceptor(o.defaultDeadlineMs, nowMs)];
  if (o.metrics !== undefined) interceptors.push(metricsInterceptor(o.metrics));
  interceptors.push(...(o.interceptors ?? []));
  const channelOptions = {
    "grpc.max_receive_message_length": o.maxMessageBytes,
    "grpc.max_send_message_length": o.maxMessageBytes,
    "grpc.keepalive_time_ms": o.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": o.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.initial_reconnect_backoff_ms": o.reconnectBackoffInitialMs,
    "grpc.max_reconnect_backoff_ms": o.reconnectBackoffMaxMs,
    "grpc-node.flow_control_window": o.flowControlWindowBytes,
    // Each peer gets its own channel; never share subchannels across pools (tests run several brokers).
    "grpc.use_local_subchannel_pool": 1,
    "grpc.enable_retries": 0,
  };
  const clients = new Map<string, { client: Client; peer: PeerClient }>();

  const unary = <M extends ClusterMethod>(
    client: Client,
    address: string,
    method: M,
    req: ClusterMethods[M]["req"],
    deadlineMs: number,
    signal?: AbortSignal,
  ): Promise<ClusterMethods[M]["res"]> => {
    const def = service[method];
    return new Promise((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        req,
        new Metadata(),
        { deadline: deadlineMs },
        (err, res) => {
          signal?.removeEventListener("abort", onAbort);
          if (err !== null || res === undefined) {
            const e: NaradError = fromRpcError(
              err ?? new Error("empty response"),
              address,
              o.retryAfterSeconds,
            );
            reject(e);
          } else {
            resolve(res);
          }
        },
      );
      if (signal !== undefined) {
        if (signal.aborted) call.cancel();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
  };

  const makePeer = (address: string, client: Client): PeerClient => ({
    address,
    async commit(topic, partition, records, deadlineMs) {
      const results: CommitResult[] = [];
      for (const req of toCommitRequests(topic, partition, records, o.commitRequestBytes)) {
        try {
          results.push(fromCommitResponse(await unary(client, address, "CommitBatch", req, deadlineMs)));
        } catch (err) {
          if (results.length === 0) throw err;
          // Earlier requests of this batch landed: whatever this one says, the batch is in doubt.
          throw new PartialCommitError(
            "UNAVAILABLE",
            `commit to ${address} failed after ${results.length} acknowledged request(s): ${String(err)}`,
            { retryAfterSeconds: o.retryAfterSeconds, cause: err },
          );
        }
      }
      return mergeCommitResults(results);
    },
    read: (req) => unary(client, address, "Read", req, nowMs() + o.readTimeoutMs),
    stats: (topic, partition) =>
      unary(client, address, "Stats", { topic, partition }, nowMs() + o.readTimeoutMs),
    adminStatus: () => unary(client, address, "AdminStatus", {}, nowMs() + o.readTimeoutMs),
    consume: (req, signal) =>
      unary(client, address, "Consume", req, nowMs() + req.wait_ms + o.readTimeoutMs, signal),
    ack: async (req) => {
      await unary(client, address, "Ack", req, nowMs() + o.readTimeoutMs);
    },
    seekGroup: (req) => unary(client, address, "SeekGroup", req, nowMs() + o.readTimeoutMs),
    groupStats: (topic, partition) =>
      unary(client, address, "GroupStats", { topic, partition }, nowMs() + o.readTimeoutMs),
    deleteGroup: (req) => unary(client, address, "DeleteGroup", req, nowMs() + o.readTimeoutMs),
    moveManifest: (topic, partition) =>
      unary(client, address, "MoveManifest", { topic, partition }, nowMs() + o.readTimeoutMs),
    moveFetch: (req) => unary(client, address, "MoveFetch", req, nowMs() + o.readTimeoutMs),
    moveFreeze: (req) => unary(client, address, "MoveFreeze", req, nowMs() + o.readTimeoutMs),
    moveVerify: (req) => unary(client, address, "MoveVerify", req, nowMs() + o.readTimeoutMs),
    moveUnfreeze: async (req) => {
      await unary(client, address, "MoveUnfreeze", req, nowMs() + o.readTimeoutMs);
    },
    replicaFetch: (req, signal) =>
      unary(client, address, "ReplicaFetch", req, nowMs() + req.max_wait_ms + o.readTimeoutMs, signal),
    offsetForLeaderEpoch: (req) =>
      unary(client, address, "OffsetForLeaderEpoch", req, nowMs() + o.readTimeoutMs),
    ingest: async (req, deadlineMs) => (await unary(client, address, "Ingest", req, deadlineMs)).appended,
    confirmProducerEpoch: (req, deadlineMs) =>
      unary(client, address, "ConfirmProducerEpoch", req, deadlineMs),
  });

  return {
    peer(address) {
      let entry = clients.get(address);
      if (entry === undefined) {
        const client = new Client(address, o.credentials ?? credentials.createInsecure(), {
          ...channelOptions,
          interceptors,
        });
        entry = { client, peer: makePeer(address, client) };
        clients.set(address, entry);
      }
      return entry.peer;
    },
    retain(keep) {
      for (const [address, entry] of clients) {
        if (keep.has(address)) continue;
        entry.client.close();
        clients.delete(address);
      }
    },
    forget(address) {
      clients.get(address)?.client.close();
      clients.delete(address);
    },
    addresses: () => [...clients.keys()],
    close() {
      for (const entry of clients.values()) entry.client.close();
      clients.clear();
    },
  };
}

/**
 * Keeps the pool in line with the membership replica: closes channels of
 * addresses no member has any more, and resets the channel of a member that
 * became Active again (after a restart its old channel may sit in a
 * reconnect backoff of up to reconnectBackoffMaxMs, failing calls fast).
 * Returns the listener to call on every metastore change.
 */
export function peerMembershipSync(
  pool: Pick<PeerPool, "retain" | "forget">,
  members: () => readonly MemberView[],
): () => void {
  const lastState = new Map<string, string>();
  return () => {
    const keep = new Set<string>();
    for (const m of members()) {
      const address = clusterAddressOf(m);
      if (address === undefined) continue;
      keep.add(address);
      const before = lastState.get(address);
      if (before !== undefined && before !== "Active" && m.state === "Active") pool.forget(address);
      lastState.set(address, m.state);
    }
    for (const address of lastState.keys()) if (!keep.has(address)) lastState.delete(address);
    pool.retain(keep);
  };
}
