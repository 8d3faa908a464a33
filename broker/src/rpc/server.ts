// The cluster RPC server (narad.v1.Cluster on config.cluster, TCP 7943): the
// owner side of commits from peers' dispatchers, forwarded reads and stats,
// and node status. A handler refuses partitions this node's replica says it
// does not own (FAILED_PRECONDITION: the caller retries), so a commit never
// lands in a log nobody reads.

import {
  type handleUnaryCall,
  Server,
  ServerCredentials,
  type ServerInterceptor,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { topicNamePattern } from "../api-contract.ts";
import type { ConsumerManager } from "../consumer/manager.ts";
import { defaultGroup, parseHandle } from "../core/consumer-handle.ts";
import { assertTopicIdentity } from "../core/topic-identity.ts";
import { badRequest, NaradError, topicNotFound } from "../errors.ts";
import { isLogError } from "../log/log-errors.ts";
import type { PartitionLog, PartitionStats } from "../log/types.ts";
import type { Metastore } from "../meta/types.ts";
import type { MoveSource } from "../moves/source.ts";
import {
  fromCommitRequest,
  seekTargetFromPb,
  toCommitResponse,
  toPbStats,
  toPbStoredRecord,
} from "./codec.ts";
import type { RpcMetrics } from "./metrics.ts";
import { readFromLog } from "./partition-access.ts";
import {
  type ClusterMethod,
  type ClusterMethods,
  clusterService,
  type PbAdminStatusResponse,
  type PbCommitBatchRequest,
  type PbConfirmProducerEpochRequest,
  type PbConfirmProducerEpochResponse,
  type PbIngestRequest,
  type PbOffsetForLeaderEpochRequest,
  type PbOffsetForLeaderEpochResponse,
  type PbReplicaFetchRequest,
  type PbReplicaFetchResponse,
  type ReplicaErrorCode,
} from "./proto.ts";
import { NotOwnerError, toRpcFailure, toServiceError } from "./status.ts";

/** What the ReplicaFetch / OffsetForLeaderEpoch handlers call once the partition is known to be led here. */
export interface ReplicaLeaderService {
  fetch(
    log: PartitionLog,
    dir: string,
    req: PbReplicaFetchRequest,
    signal: AbortSignal,
  ): Promise<PbReplicaFetchResponse>;
  offsetForLeaderEpoch(
    log: PartitionLog,
    dir: string,
    req: PbOffsetForLeaderEpochRequest,
  ): Promise<PbOffsetForLeaderEpochResponse>;
  /** The partition's directory (the leader-epochs file lives there). */
  partitionDir(topic: string, partition: number): string;
}

/** Test-only fault injection (never set in production wiring). */
export interface ClusterServerHooks {
  /** Runs as an owner's commit starts (e.g. a slow fsync: a delay past the caller's deadline). */
  beforeCommit?(req: PbCommitBatchRequest): Promise<void>;
  /** Runs as a ConfirmProducerEpoch call starts (e.g. throws: a confirmation that never arrives). */
  beforeConfirmProducerEpoch?(req: PbConfirmProducerEpochRequest): Promise<void>;
}

export interface ClusterServerDeps {
  nodeId: string;
  metastore: Pick<Metastore, "getTopic" | "ownerOf">;
  logs: {
    get(topic: string, partition: number): Promise<PartitionLog>;
    peekStats(topic: string, partition: number): Promise<PartitionStats>;
  };
  adminStatus(): PbAdminStatusResponse;
  /** Called after a peer's records were appended to one of our partitions (e.g. wake queue consumers). */
  onCommitted?: (topic: string, partition: number) => void;
  /** Queue consumption of the partitions this node owns (Consume, Ack); absent, those calls answer UNAVAILABLE. */
  consumers?: Pick<
    ConsumerManager,
    "consume" | "settle" | "validGroup" | "seek" | "partitionGroups" | "deleteGroup"
  >;
  /**
   * Appends produce a draining peer forwarded to this node's ingress WAL
   * (resolves after the fsync; throws UNAVAILABLE when this node refuses
   * produce itself). Absent, Ingest answers UNAVAILABLE.
   */
  ingest?: (records: PbIngestRequest["records"], from: string) => Promise<number>;
  /**
   * The re-init barrier's member side: answers the epoch this node's
   * producer-registry view holds for the id, after a read of the store when
   * the view held less than the request's. Absent (no registry),
   * ConfirmProducerEpoch answers UNAVAILABLE.
   */
  confirmProducerEpoch?: (req: PbConfirmProducerEpochRequest) => Promise<PbConfirmProducerEpochResponse>;
  /**
   * Leader side of replication (replication-io/leader-source.ts): ReplicaFetch
   * and OffsetForLeaderEpoch. Absent, both answer UNAVAILABLE. The handler
   * checks ownership first (not_leader) with the same rule as commits.
   */
  replicas?: ReplicaLeaderService;
  /** Source side of partition moves; absent, the Move* calls answer UNAVAILABLE. */
  moves?: Pick<MoveSource, "manifest" | "fetch" | "freeze" | "unfreeze" | "verify">;
  readMaxRecords: number;
  readMaxBytes: number;
  /** This node's --max-consume-wait (the asking node capped the wait with its own already). */
  consumeMaxWaitMs: number;
  metrics?: RpcMetrics;
  logger?: { warn(obj: object, msg: string): void };
  hooks?: ClusterServerHooks;
}

export interface ClusterServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  maxMessageBytes: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  shutdownGraceMs: number;
  /** Server interceptors (e.g. the cluster-auth check), run before any handler. */
  interceptors?: ServerInterceptor[];
  /** TLS (rpc/tls.ts); insecure when absent. */
  credentials?: ServerCredentials;
}

export interface ClusterServer {
  /** host:port actually bound. */
  readonly address: string;
  readonly port: number;
  /** Stops accepting calls, lets in-flight ones finish (bounded), then closes. */
  close(): Promise<void>;
  /** Test hook: drops every connection and call at once (a crashed peer, as callers see it). */
  kill(): void;
  /** Test hook: serves again on the same port after kill(). */
  restart(): Promise<void>;
}

function formatHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

export function clusterHandlers(d: ClusterServerDeps): UntypedServiceImplementation {
  const checkOwned = (topic: string, partition: number): void => {
    const t = d.metastore.getTopic(topic);
    if (t === undefined) throw topicNotFound(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= t.partitions) {
      throw badRequest(
        `partition ${partition} out of range for topic "${topic}" (${t.partitions} partitions)`,
      );
    }
    const owner = d.metastore.ownerOf(topic, partition);
    if (owner !== d.nodeId) {
      throw new NotOwnerError(
        `node ${d.nodeId} does not own ${topic}/${partition} (owner: ${owner || "none"})`,
      );
    }
  };
  const ownedLog = async (topic: string, partition: number): Promise<PartitionLog> => {
    checkOwned(topic, partition);
    return d.logs.get(topic, partition);
  };

  const queueConsumers = () => {
    if (d.consumers === undefined)
      throw new NaradError("UNAVAILABLE", `node ${d.nodeId} serves no queue consumption`);
    return d.consumers;
  };

  const knownTopic = (name: string) => {
    const topic = d.metastore.getTopic(name);
    if (topic === undefined) throw topicNotFound(name);
    return topic;
  };

  /** The request's group ("" = the default group), refused unless it can name a frontier file. */
  const validGroup = (consumers: ReturnType<typeof queueConsumers>, requested: string): string => {
    const group = requested === "" ? defaultGroup : requested;
    if (!consumers.validGroup(group))
      throw badRequest("group must match ^[A-Za-z0-9._-]{1,244}$ (244: the longest that fits a file name)");
    return group;
  };

  const unary = <M extends ClusterMethod>(
    method: M,
    fn: (
      req: ClusterMethods[M]["req"],
      cancelled: () => boolean,
      signal: AbortSignal,
    ) => Promise<ClusterMethods[M]["res"]>,
  ): handleUnaryCall<ClusterMethods[M]["req"], ClusterMethods[M]["res"]> => {
    return (
      call: ServerUnaryCall<ClusterMethods[M]["req"], ClusterMethods[M]["res"]>,
      callback: sendUnaryData<ClusterMethods[M]["res"]>,
    ) => {
      const started = performance.now();
      const done = (code: status): void => {
        d.metrics?.serverRequests.inc({ method, code: status[code] ?? String(code) });
        d.metrics?.serverSeconds.observe({ method }, (performance.now() - started) / 1000);
      };
      // Aborted when the caller cancels or its deadline passes (a forwarded long-poll stops waiting).
      const abort = new AbortController();
      call.once("cancelled", () => abort.abort());
      fn(call.request, () => call.cancelled, abort.signal).then(
        (res) => {
          done(status.OK);
          callback(null, res);
        },
        (err: unknown) => {
          const f = toRpcFailure(err);
          if (f.code === status.INTERNAL || f.code === status.UNAVAILABLE) {
            d.logger?.warn({ err, method }, "cluster RPC failed");
          }
          done(f.code);
          callback(toServiceError(f));
        },
      );
    };
  };

  const moves = () => {
    if (d.moves === undefined)
      throw new NaradError("UNAVAILABLE", `node ${d.nodeId} serves no partition moves`);
    return d.moves;
  };

  const replicas = () => {
    if (d.replicas === undefined)
      throw new NaradError("UNAVAILABLE", `node ${d.nodeId} serves no replica fetches`);
    return d.replicas;
  };
  /**
   * The led partition's log, or the refusal the follower acts on (in the
   * answer, not a gRPC status: "not leader" and "unknown topic" are normal
   * replication states, not failures of the call).
   */
  const ledLog = async (
    topic: string,
    partition: number,
  ): Promise<{ log: PartitionLog } | { error: ReplicaErrorCode; message: string }> => {
    try {
      return { log: await ownedLog(topic, partition) };
    } catch (err) {
      if (err instanceof NotOwnerError || isLogError(err, "NOT_LEADER"))
        return { error: "not_leader", message: (err as Error).message };
      if (err instanceof NaradError && err.apiCode === "topic_not_found")
        return { error: "unknown_topic", message: err.message };
      throw err;
    }
  };
  const noFrames = Buffer.alloc(0);

  return {
    ReplicaFetch: unary("ReplicaFetch", async (req, _cancelled, signal) => {
      const r = replicas();
      const led = await ledLog(req.topic, req.partition);
      if ("error" in led)
        return {
          error: led.error,
          message: led.message,
          frames: noFrames,
          leader_hwm: 0,
          leader_epoch: -1,
          log_start_offset: 0,
          log_end_offset: 0,
          epoch_starts: [],
          frontiers: [],
          fanout_cursors: [],
        };
      return r.fetch(led.log, r.partitionDir(req.topic, req.partition), req, signal);
    }),

    OffsetForLeaderEpoch: unary("OffsetForLeaderEpoch", async (req) => {
      const r = replicas();
      const led = await ledLog(req.topic, req.partition);
      if ("error" in led)
        return { error: led.error, message: led.message, epoch: -1, end_offset: 0, leader_epoch: -1 };
      return r.offsetForLeaderEpoch(led.log, r.partitionDir(req.topic, req.partition), req);
    }),

    MoveManifest: unary("MoveManifest", async (req) => moves().manifest(req.topic, req.partition)),

    MoveFetch: unary("MoveFetch", async (req) =>
      moves().fetch(req.topic, req.partition, req.base, req.position, req.max_bytes),
    ),

    MoveFreeze: unary("MoveFreeze", async (req) =>
      moves().freeze(req.topic, req.partition, req.token, req.ttl_ms, req.handoff === true),
    ),

    MoveVerify: unary("MoveVerify", async (req) => moves().verify(req.topic, req.partition, req.segments)),

    Ingest: unary("Ingest", async (req) => {
      if (d.ingest === undefined)
        throw new NaradError("UNAVAILABLE", `node ${d.nodeId} takes no forwarded produce`);
      return { appended: await d.ingest(req.records, req.from_node) };
    }),

    ConfirmProducerEpoch: unary("ConfirmProducerEpoch", async (req) => {
      await d.hooks?.beforeConfirmProducerEpoch?.(req);
      if (d.confirmProducerEpoch === undefined)
        throw new NaradError("UNAVAILABLE", `node ${d.nodeId} has no producer registry`);
      return d.confirmProducerEpoch(req);
    }),

    MoveUnfreeze: unary("MoveUnfreeze", async (req) => {
      moves().unfreeze(req.topic, req.partition, req.token);
      return {};
    }),

    CommitBatch: unary("CommitBatch", async (req, cancelled) => {
      const log = await ownedLog(req.topic, req.partition);
      // A caller that already gave up (deadline, dropped connection) will
      // re-send; not starting the commit keeps the outcome unambiguous.
      if (cancelled()) throw new NaradError("UNAVAILABLE", "call cancelled before the commit started");
      await d.hooks?.beforeCommit?.(req);
      // Once started, a commit completes even if the caller's deadline passes
      // meanwhile: the caller re-sends and the (incarnation, seq) dedup
      // answers "duplicate".
      const records = fromCommitRequest(req);
      // After the awaits above: the topic may have been deleted (and created
      // again) meanwhile. Checked synchronously before the append starts.
      assertTopicIdentity(req.topic, d.metastore.getTopic(req.topic), records);
      const res = await log.commitDurable(records);
      if (res.appended > 0) d.onCommitted?.(req.topic, req.partition);
      d.metrics?.serverCommitRecords.inc({ result: "appended" }, res.appended);
      if (res.duplicates > 0) d.metrics?.serverCommitRecords.inc({ result: "duplicate" }, res.duplicates);
      if ((res.fenced ?? 0) > 0) d.metrics?.serverCommitRecords.inc({ result: "fenced" }, res.fenced);
      if ((res.outOfOrder ?? 0) > 0)
        d.metrics?.serverCommitRecords.inc({ result: "out_of_order" }, res.outOfOrder);
      return toCommitResponse(res);
    }),

    Read: unary("Read", async (req) => {
      const log = await ownedLog(req.topic, req.partition);
      const maxRecords = Math.min(Math.max(req.max_records, 1), d.readMaxRecords);
      const maxBytes = Math.min(Math.max(req.max_bytes, 1), d.readMaxBytes);
      const res = await readFromLog(log, req.offset, maxRecords, maxBytes);
      return {
        records: res.records.map(toPbStoredRecord),
        high_watermark: res.highWatermark,
        oldest_offset: res.oldestOffset,
      };
    }),

    // A stats read must not open (or create) an empty partition log.
    Stats: unary("Stats", async (req) => {
      checkOwned(req.topic, req.partition);
      return toPbStats(await d.logs.peekStats(req.topic, req.partition));
    }),

    AdminStatus: unary("AdminStatus", async () => d.adminStatus()),

    Consume: unary("Consume", async (req, _cancelled, signal) => {
      const consumers = queueConsumers();
      const group = validGroup(consumers, req.group);
      await ownedLog(req.topic, req.partition);
      const topic = d.metastore.getTopic(req.topic)!;
      const waitMs = Math.min(req.wait_ms, d.consumeMaxWaitMs);
      const got = await consumers.consume(topic, group, req.partition, waitMs, signal);
      if (got === undefined)
        return { found: false, partition: req.partition, record: null, receipt_handle: "" };
      if (signal.aborted) {
        // The caller is gone and will never see the handle: release the lease now, not after the visibility timeout.
        try {
          consumers.settle(topic, got.receiptHandle, "nack");
        } catch {
          // already released (expiry, group deleted): nothing to undo
        }
        throw new NaradError("UNAVAILABLE", "call cancelled while the message was being leased");
      }
      return {
        found: true,
        partition: got.partition,
        record: toPbStoredRecord(got.record),
        receipt_handle: got.receiptHandle,
      };
    }),

    Ack: unary("Ack", async (req) => {
      const consumers = queueConsumers();
      const topic = knownTopic(req.topic);
      const parsed = parseHandle(req.receipt_handle, topicNamePattern);
      if (!parsed.ok) throw badRequest(parsed.reason);
      const group = req.group === "" ? defaultGroup : req.group;
      if (parsed.handle.group !== group)
        throw badRequest(`receipt_handle names group "${parsed.handle.group}", not "${group}"`);
      await ownedLog(req.topic, parsed.handle.partition);
      const action = req.extend === undefined ? "ack" : req.extend ? "extend" : "nack";
      consumers.settle(topic, req.receipt_handle, action);
      return {};
    }),

    SeekGroup: unary("SeekGroup", async (req) => {
      const consumers = queueConsumers();
      const topic = knownTopic(req.topic);
      const group = validGroup(consumers, req.group);
      const target = seekTargetFromPb(req);
      await ownedLog(req.topic, req.partition);
      const r = await consumers.seek(topic, group, req.partition, target);
      return { previous: r.previous, committed: r.committed };
    }),

    GroupStats: unary("GroupStats", async (req) => {
      const consumers = queueConsumers();
      const topic = knownTopic(req.topic);
      await ownedLog(req.topic, req.partition);
      const r = await consumers.partitionGroups(topic, req.partition);
      return { high_watermark: r.highWatermark, groups: r.groups };
    }),

    DeleteGroup: unary("DeleteGroup", async (req) => {
      const consumers = queueConsumers();
      const topic = knownTopic(req.topic);
      const group = validGroup(consumers, req.group);
      return { existed: await consumers.deleteGroup(topic, group) };
    }),
  };
}

export async function startClusterServer(
  deps: ClusterServerDeps,
  o: ClusterServerOptions,
): Promise<ClusterServer> {
  const handlers = clusterHandlers(deps);
  const serverOptions = {
    "grpc.max_receive_message_length": o.maxMessageBytes,
    "grpc.max_send_message_length": o.maxMessageBytes,
    "grpc.keepalive_time_ms": o.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": o.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": 1,
    interceptors: o.interceptors ?? [],
  };
  const bind = (server: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.bindAsync(
        formatHostPort(o.host, port),
        o.credentials ?? ServerCredentials.createInsecure(),
        (err, bound) => (err ? reject(err) : resolve(bound)),
      );
    });
  const create = (): Server => {
    const server = new Server(serverOptions);
    server.addService(clusterService(), handlers);
    return server;
  };

  let server = create();
  const port = await bind(server, o.port);
  let alive = true;

  return {
    address: formatHostPort(o.host, port),
    port,
    close: () =>
      new Promise<void>((resolve) => {
        if (!alive) return resolve();
        alive = false;
        const s = server;
        const timer = setTimeout(() => {
          s.forceShutdown();
          resolve();
        }, o.shutdownGraceMs);
        s.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    kill() {
      if (!alive) return;
      alive = false;
      server.forceShutdown();
    },
    async restart() {
      if (alive) return;
      server = create();
      await bind(server, port);
      alive = true;
    },
  };
}
