// Every default and limit of the broker, with its unit last in the name.
// Imported only by config.ts (to build the Config) and the composition root
// (node.ts, node/*.ts, to wire values no setting exposes); every other module
// receives its values through its options, so tests can shrink them. A
// dependency-cruiser rule enforces this (tests are exempt). Names and limits
// that are part of the API, not tunables, are in api-contract.ts.

const KiB = 1024;
const MiB = 1024 * KiB;

// Ports (ARCHITECTURE.md §2).
export const httpPortDefault = 7942;
export const clusterPortDefault = 7943;

// Ingress WAL.
export const walSyncBackstopMs = 10;
export const walSegmentBytes = 64 * MiB;
export const walRotateDispatchedBytes = 1 * MiB;
export const walMaxRecordBytes = 16 * MiB;
/** One group commit never stages more than this; later appends wait for the next write. */
export const walMaxGroupBytes = 8 * MiB;

// Partition logs.
export const logSegmentBytes = 64 * MiB;
export const logIndexIntervalBytes = 32 * KiB;
export const logMaxFrameBytes = 256 * MiB;
export const logHwmPersistIntervalMs = 5_000;

// Dispatcher (seed design).
export const dispatchIdlePollMs = 10;
export const dispatchWindowRecords = 4_096;
export const dispatchWindowCapRecords = 65_536;
export const dispatchTargetPerPartition = 64;
export const dispatchLookaheadWindows = 16;
export const dispatchRerouteAfterPasses = 3;
export const dispatchCommitTimeoutMs = 30_000;

// Partition replication (docs/replication.md, ADR 0007).
/** A follower not caught up for this long leaves the ISR (Kafka's replica.lag.time.max.ms is 30 s; brokers here are near). */
export const replicaLagMs = 10_000;
/** How long a leader holds a commit for its replicas; below the dispatcher's commit deadline so the answer arrives. */
export const replicaCommitTimeoutMs = 10_000;
export const replicaIsrCheckIntervalMs = 500;
export const replicaIsrRetryMs = 1_000;
/** One fetch answer's frames (well inside rpcMaxMessageBytes). */
export const replicaFetchMaxBytes = 8 * 1024 * 1024;
/** A follower's long poll at the leader's end: short, so a new leader or a lost one is noticed quickly. */
export const replicaFetchMaxWaitMs = 500;
export const replicaRetryBackoffMs = 250;
/** A leader re-reads its group frontiers for its followers at most this often. */
export const replicaFrontierRefreshMs = 1_000;
/** A follower persists its HWM lazily (Kafka checkpoints its high watermarks every 5 s). */
export const replicaCheckpointIntervalMs = 1_000;
/** A commit that failed without an answer is kept for its Down owner this long before a reroute (dispatch-plan.ts I4). */
export const dispatchInDoubtHoldMs = 120_000;
export const dispatchErrorBackoffMs = 1_000;
export const dispatchCommitFanout = 16;
export const dispatchMaxBatchBytes = 8 * MiB;

// HTTP API.
export const produceMaxBodyBytes = 1 * MiB;
export const batchProduceMaxBodyBytes = 64 * MiB;
export const readMaxRecords = 1_000;
export const readMaxBytes = 8 * MiB;
export const drainTimeoutMs = 25_000;
/** How long an acks=all produce waits for the owner's commit before 503 commit_timeout. */
export const acksAllTimeoutMs = 15_000;
/** acks of a produce that names none: all on a replicated topic, wal otherwise (docs/replication.md, "acks"). */
export const defaultAcks = "auto";
/**
 * Cluster mode: how long a read of the producer registry is trusted for an
 * epoch decision, and so the longest a re-init waits for a broker that does
 * not confirm the new epoch (docs/adr/0008-producer-fence-lease.md).
 */
export const producerFenceLeaseMs = 10_000;
/** Highest --producer-fence-lease-ms: a re-init may wait about this long, within the client's init timeout (90 s). */
export const producerFenceLeaseMaxMs = 60_000;
export const retryAfterSeconds = 1;
/**
 * Kubernetes metastore: the API users Secret is read every usersPollMs, and a
 * decision about its users never uses a read older than usersMaxStalenessMs
 * (several failed reads in a row before anyone gets a 503).
 */
export const usersPollMs = 1_000;
export const usersMaxStalenessMs = 10_000;
export const usersMaxStalenessMinMs = 3 * usersPollMs;
export const usersMaxStalenessMaxMs = 120_000;
/** One read or write of the API users Secret waits at most this long. */
export const usersRequestTimeoutMs = 3_000;

// Topics (narad-go defaults).
export const topicPartitionsDefault = 3;
export const topicPartitionsMin = 1;
export const topicPartitionsMax = 108;
/** Highest --topic-max-partitions: partition directories are pNNNNN. */
export const topicPartitionsCeiling = 99_999;
export const topicRetentionMsDefault = 7 * 24 * 3600 * 1000;
export const topicVisibilityTimeoutMsDefault = 30_000;
export const topicMaxInFlightDefault = 1_024;
export const topicMaxAckedAheadDefault = 1_024;
/**
 * `--replication`: on, topics default to 3 copies (minimum 2) on a cluster of
 * at least 3 brokers; off, every new topic has one copy (docs/replication.md).
 */
export const replicationDefault: "on" | "off" = "on";
export const retentionCheckIntervalMs = 60_000;

// Queue consumption (receipt handles, consumer groups).
/** `wait` on consume is capped here (Narad v1 max_consume_wait). */
export const consumeMaxWaitMs = 10_000;
/** A node owning none of a topic's partitions re-probes the owners this often during a queue long-poll. */
export const consumeReprobeIntervalMs = 250;
/** Moved group frontiers are written durably at most this often (and at shutdown). */
export const consumerFrontierPersistIntervalMs = 100;
/** Expired leases are released for redelivery at least this often (also on every consume). */
export const consumerPurgeIntervalMs = 1_000;
/** Long-polling consumes parked on one node; beyond it consume gets 503. */
export const consumerMaxWaiters = 10_000;
export const consumerMaxGroupsPerTopic = 1_000;
/** Corrupt/expired offsets skipped within one consume before it answers 204. */
export const consumerMaxSkipsPerTake = 64;

// Admission (ARCHITECTURE.md §3).
export const admissionBudgetBytes = 128 * MiB;
export const admissionWaitMs = 15_000;

// Cluster RPC (gRPC, ARCHITECTURE.md §2). A peer's RPC address is its
// Member.clusterAddress, else its HTTP host with port + 1 (7942 → 7943).
/** Largest gRPC message either side accepts: the largest WAL record plus key and framing margin. */
export const rpcMaxMessageBytes = walMaxRecordBytes + 1 * MiB;
/** A commit batch is split into several CommitBatch calls (in seq order) above this many record bytes. */
export const rpcCommitRequestBytes = walMaxRecordBytes;
/** Deadline of forwarded reads, stats and status calls. */
export const rpcReadTimeoutMs = 5_000;
/** Deadline of any call that does not set one (commits carry the dispatcher's). */
export const rpcDefaultDeadlineMs = 30_000;
export const rpcKeepaliveTimeMs = 10_000;
export const rpcKeepaliveTimeoutMs = 5_000;
export const rpcReconnectBackoffInitialMs = 250;
export const rpcReconnectBackoffMaxMs = 5_000;
/** HTTP/2 flow-control window per stream/connection on peer channels (the default 64 KiB throttles 8 MiB batches). */
export const rpcFlowControlWindowBytes = 8 * MiB;
/** Graceful server stop waits this long for in-flight calls before forcing. */
export const rpcShutdownGraceMs = 5_000;

// Partition moves (moves/, narad-go's rebalance numbers).
/** Catch-up and finalize copy in chunks of this many bytes (one MoveFetch each). */
export const moveChunkBytes = 1 * MiB;
/** Freeze the source once the copy is at most this far behind. */
export const moveCloseEnoughBytes = 4 * MiB;
export const moveMaxCatchUpRounds = 20;
/** Freeze anyway after this many catch-up rounds in a row without getting closer. */
export const moveMaxStalledRounds = 3;
/** A source freeze lapses this long after its last renewal. */
export const moveFreezeTtlMs = 30_000;
/** A ready destination renews the freeze this often. */
export const moveRenewIntervalMs = 5_000;
/** Failed move steps are retried after this long. */
export const moveRetryMs = 2_000;
/** The old owner deletes its copy of a moved partition this long after it saw the new owner. */
export const moveSourceDeleteDelayMs = 10_000;

// Relations the design relies on.
if (walRotateDispatchedBytes >= walSegmentBytes)
  throw new Error("rotate threshold must be below segment size");
if (dispatchWindowRecords > dispatchWindowCapRecords) throw new Error("window base above cap");
if (walMaxRecordBytes > walSegmentBytes) throw new Error("a WAL record must fit a segment");
if (rpcCommitRequestBytes >= rpcMaxMessageBytes) throw new Error("a commit request must fit an RPC message");
if (moveChunkBytes >= rpcMaxMessageBytes) throw new Error("a move chunk must fit an RPC message");
if (moveRenewIntervalMs * 3 > moveFreezeTtlMs) throw new Error("a freeze must survive two missed renewals");

// Limits against hostile clients (docs/security.md, config.ts LimitsConfig).
/** A decoded record costs ~300 B of heap beyond its bytes: 100k records ≈ 30 MB. */
export const batchMaxRecords = 100_000;
export const maxTopics = 1_000;
/** 2+ fds per open partition log: 4,096 partitions fit a 16k nofile limit with room for sockets. */
export const maxPartitions = 4_096;
export const maxOpenLogs = 4_096;
/** Sealed-segment read handles open at once over all logs (log/segment-handles.ts); opened on demand. */
export const maxSegmentFds = 1_024;
export const headersTimeoutMs = 10_000;
export const requestTimeoutMs = 300_000;
/** Above consumeMaxWaitMs, so a long poll is never cut as idle. */
export const idleTimeoutMs = 75_000;
/**
 * A byte every few seconds fails this; an honest slow link passes it. The
 * whole request is also bounded by requestTimeoutMs (300 s), so the largest
 * batch (64 MiB) needs about 220 KiB/s: raise --request-timeout-ms for
 * slower links that send big batches.
 */
export const bodyMinBytesPerSecond = 32 * 1024;
export const bodyGraceMs = 5_000;
export const loginFreeAttempts = 5;
export const loginIntervalMs = 12_000;
/** At most this many scrypt checks at once (Narad v1: 4 bcrypt checks). */
export const hashConcurrency = 4;
export const hashMaxQueued = 256;
/** Named producers the registry keeps (each named init rewrites the whole registry file). */
export const maxNamedProducers = 10_000;
