// Composes one broker node from its parts: metastore, ingress WAL, partition
// logs, dispatcher and HTTP API. Owns the startup order (recover storage
// before listening) and the shutdown order (stop produce, drain the WAL into
// the logs, close everything).

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { Gauge } from "prom-client";
import { resourceNames } from "../../packages/api/src/v1alpha1/names.ts";
import { openSecurity } from "./auth/setup.ts";
import type { Config } from "./config.ts";
import * as k from "./constants.ts";
import { ConsumerManager } from "./consumer/manager.ts";
import { type ConfirmAnswer, confirmedByAll, confirmTargets } from "./core/producer-fence.ts";
import { clusterAddressOf } from "./core/routing.ts";
import { type ClusterDestinationHooks, clusterDestinations } from "./dispatch/cluster-destinations.ts";
import { CommitWaiters, commitOutcomeMetrics, withCommitWaiters } from "./dispatch/commit-waiters.ts";
import { createDispatcher } from "./dispatch/dispatcher.ts";
import { openDoneSetStore } from "./dispatch/done-set-store.ts";
import { dispatchMetricsSink } from "./dispatch/metrics-sink.ts";
import { defaultParkedMaxBytes, openParkedStore } from "./dispatch/parked-store.ts";
import { FanoutEngine } from "./fanout/engine.ts";
import { buildApp } from "./http/app.ts";
import { createProduceForwarder, fromIngestRecords } from "./http/produce-forward.ts";
import { openLogStore } from "./log/log-store.ts";
import { openFileMetastore } from "./meta/file-metastore.ts";
import { loadKubeConfig, openKubeMetastore } from "./meta/kube-metastore.ts";
import type { Metastore } from "./meta/types.ts";
import { createBrokerMetrics } from "./metrics.ts";
import { MoveManager, type MoveTiming } from "./moves/destination.ts";
import { MoveSource } from "./moves/source.ts";
import { kubeRegistryStore } from "./producers/kube-registry-store.ts";
import {
  defaultIdBlock,
  fileRegistryStore,
  openProducerRegistry,
  type RegistryFenceOptions,
  type RegistryStore,
} from "./producers/registry.ts";
import { createPeerPool, peerMembershipSync } from "./rpc/client.ts";
import { createRpcMetrics } from "./rpc/metrics.ts";
import { createPartitionAccess } from "./rpc/partition-access.ts";
import { createClusterConsumers } from "./rpc/queue-access.ts";
import { type ClusterServer, type ClusterServerHooks, startClusterServer } from "./rpc/server.ts";
import type { BrokerServices } from "./services.ts";
import { acquireDataDirLock } from "./storage/data-dir-lock.ts";
import { type FileIo, nodeFileIo } from "./storage/file-io.ts";
import { meteredIo } from "./storage/metered-io.ts";
import { openIngressWal } from "./wal/ingress-wal.ts";

export interface RunningBroker {
  /** host:port the API listens on ("" when started with listen: false). */
  httpAddress: string;
  /** The fastify app, for inject() in tests. */
  app: FastifyInstance;
  /** Stops produce, drains the WAL (bounded), closes storage. Resolves whether the WAL fully drained. */
  shutdown(): Promise<boolean>;
  /** The cluster RPC server (cluster mode: a metastore other than the file one), else undefined. */
  cluster: ClusterServer | undefined;
  /**
   * Test only: stops at once without draining (in-flight commits abandoned,
   * the WAL checkpoint left where it is), as a crash would, minus the kill.
   */
  crash(): Promise<void>;
}

export interface StartBrokerOptions {
  listen?: boolean;
  /** Use this metastore instead of the file one (in-process cluster tests). */
  metastore?: Metastore;
  /** Test-only fault injection in the cluster data path. */
  testHooks?: { server?: ClusterServerHooks; destinations?: ClusterDestinationHooks };
  /** Use this producer-registry store instead of the data dir's file (in-process cluster tests share one). */
  producerRegistryStore?: RegistryStore;
  /** Test-only: wraps the ingress WAL's file I/O (broker/test/harness/faulty-serve.ts injects EIO, ENOSPC, slow fsyncs). */
  walIo?: (io: FileIo) => FileIo;
  /** Test-only: shorter partition-move timings (freeze ttl, renewal, retry, source delete delay). */
  moveTiming?: Partial<MoveTiming> & { sourceDeleteDelayMs?: number };
}

export async function startBroker(
  config: Config,
  logger: Logger,
  opts: StartBrokerOptions = {},
): Promise<RunningBroker> {
  const nowMs = () => Date.now();
  // Leases, visibility timeouts and long-poll deadlines run on a monotonic
  // clock (epoch-like ms: wall time at process start + monotonic elapsed), so
  // a wall-clock step (NTP, an operator setting the date) neither expires
  // every lease at once nor keeps one for an hour. Record timestamps and
  // retention stay on the wall clock.
  const monoMs = () => performance.timeOrigin + performance.now();
  await mkdir(config.dataDir, { recursive: true });
  const lock = await acquireDataDirLock(config.dataDir);
  const metrics = createBrokerMetrics({ defaultMetrics: true, dataDir: config.dataDir });
  const metastore =
    opts.metastore ??
    (config.metastore === "kubernetes"
      ? await openKubeMetastore({
          kubeConfig: loadKubeConfig(),
          namespace: config.namespace,
          clusterName: config.clusterName,
          logger: logger.child({ component: "metastore" }),
        })
      : await openFileMetastore({
          dataDir: config.dataDir,
          nodeId: config.nodeId,
          address: `${config.http.host}:${config.http.port}`,
        }));
  // Cluster mode: peers own partitions. The file metastore is one node, so it
  // needs no RPC server (and several single nodes can share a machine).
  const clustered = metastore.kind !== "file";
  const wal = await openIngressWal({
    dir: join(config.dataDir, "ingress", "produce"),
    ...config.wal,
    io: meteredIo(opts.walIo?.(nodeFileIo) ?? nodeFileIo, {
      write: (bytes) => metrics.walGroupBytes.observe(bytes),
      sync: (seconds) => metrics.walFsyncSeconds.observe(seconds),
    }),
    logger: logger.child({ component: "wal" }),
  });
  const walStats = wal.stats();
  logger.info(
    {
      pending: walStats.pendingRecords,
      checkpoint: walStats.checkpoint,
      corruptFrames: walStats.corruptFrames,
    },
    "ingress WAL recovered",
  );
  // Producer identities: the data dir's file on one node, a ConfigMap with
  // the kubernetes metastore, a shared store in in-process cluster tests.
  // A broker that cannot open the ConfigMap (its Role predates the registry:
  // 403) still serves everything else; POST /v1/producers answers 503.
  const openKubeRegistry = async (): Promise<RegistryStore | undefined> => {
    try {
      return await kubeRegistryStore({
        kubeConfig: loadKubeConfig(),
        namespace: config.namespace,
        name: resourceNames(config.clusterName).producerRegistry,
        block: defaultIdBlock,
        logger: logger.child({ component: "producer-registry" }),
      });
    } catch (err) {
      logger.error(
        { err: err instanceof Error ? err.message : String(err) },
        "producer registry unavailable: idempotent producers are refused until a restart can open it",
      );
      return undefined;
    }
  };
  const registryStore =
    opts.producerRegistryStore ??
    (metastore.kind === "kubernetes"
      ? await openKubeRegistry()
      : clustered
        ? undefined
        : fileRegistryStore(config.dataDir));
  // Fencing across brokers (cluster mode: several brokers share the store;
  // docs/adr/0008-producer-fence-lease.md). A single node's view is the store.
  const selfListed = (): boolean => metastore.members().some((m) => m.id === config.nodeId);
  /** The re-init barrier's question to every other member; true only when all that may decide confirmed. */
  const confirmEverywhere = async (id: string, epoch: number, timeoutMs: number): Promise<boolean> => {
    const membershipBefore = metastore.membershipEpoch?.() ?? 0;
    // A member list from a lagging metastore watch may lack a broker: only the lease covers it.
    if (metastore.caughtUp?.() === false) return false;
    const plan = confirmTargets(metastore.members(), config.nodeId);
    if (!plan.complete) return false;
    const deadlineMs = nowMs() + timeoutMs;
    const answers = await Promise.all(
      plan.addresses.map((address) =>
        peers
          .peer(address)
          .confirmProducerEpoch({ producer_id: id, epoch, from_node: config.nodeId }, deadlineMs)
          .then(
            (r): ConfirmAnswer => ({ epoch: r.epoch, membershipEpoch: r.membership_epoch }),
            (err: unknown) => {
              logger.debug(
                { address, producer: id, epoch, err: err instanceof Error ? err.message : String(err) },
                "producer epoch not confirmed by a member; the re-init waits out the fence lease",
              );
              return undefined;
            },
          ),
      ),
    );
    return confirmedByAll(plan, answers, epoch, membershipBefore, metastore.membershipEpoch?.() ?? 0);
  };
  const fence: RegistryFenceOptions | undefined = clustered
    ? {
        leaseMs: config.producerFenceLeaseMs,
        nowMs: monoMs,
        trusted: selfListed,
        confirm: confirmEverywhere,
        onBarrier: (outcome, ms) => {
          metrics.producerFenceBarriers.inc({ outcome });
          metrics.producerFenceBarrierSeconds.observe({ outcome }, ms / 1000);
        },
        onRead: (reason, ok) => metrics.producerRegistryReads.inc({ reason, result: ok ? "ok" : "error" }),
      }
    : undefined;
  const producerRegistry =
    registryStore === undefined
      ? undefined
      : await openProducerRegistry(registryStore, defaultIdBlock, config.limits.maxNamedProducers, fence);
  if (producerRegistry !== undefined && fence !== undefined) {
    // Joining the member list: a barrier that started before other brokers
    // listed this one did not ask it, so the reads from before do not count.
    let listed = selfListed();
    metastore.onChange(() => {
      const now = selfListed();
      if (now && !listed) producerRegistry.expireLease();
      listed = now;
    });
  }
  const commitWaiters = new CommitWaiters();
  const logs = await openLogStore({
    producerEpoch: (id) => producerRegistry?.epochOf(id),
    producerFence: () => producerRegistry?.fence(),
    dataDir: config.dataDir,
    segmentBytes: config.log.segmentBytes,
    indexIntervalBytes: config.log.indexIntervalBytes,
    maxFrameBytes: config.log.maxFrameBytes,
    frameTargetBytes: config.dispatch.maxBatchBytes,
    hwmPersistIntervalMs: k.logHwmPersistIntervalMs,
    nowMs,
    logger: logger.child({ component: "log" }),
    topicExists: (topic) => metastore.getTopic(topic) !== undefined,
    maxOpenLogs: config.limits.maxOpenLogs,
    maxSegmentFds: config.limits.maxSegmentFds,
    onOpenRefused: () => metrics.limitRefusals.inc({ limit: "open_logs" }),
  });
  // Read at scrape time: the sealed-segment handle cache (log/segment-handles.ts).
  new Gauge({
    name: "narad_segment_read_handles",
    help: "Sealed-segment read handles holding an fd (open, opening or closing); at most --max-segment-fds",
    registers: [metrics.registry],
    collect() {
      this.set(logs.segmentFds().open);
    },
  });
  new Gauge({
    name: "narad_segment_read_handle_waiters",
    help: "Reads waiting for a sealed-segment read handle (every handle is held by a read in flight)",
    registers: [metrics.registry],
    collect() {
      this.set(logs.segmentFds().waiting);
    },
  });
  const consumers = new ConsumerManager({
    dataDir: config.dataDir,
    logs,
    metastore,
    nowMs: monoMs,
    logger: logger.child({ component: "consumer" }),
    metrics,
    groupPattern: k.groupNamePattern,
    persistIntervalMs: k.consumerFrontierPersistIntervalMs,
    purgeIntervalMs: k.consumerPurgeIntervalMs,
    maxWaiters: k.consumerMaxWaiters,
    maxGroupsPerTopic: k.consumerMaxGroupsPerTopic,
    maxSkipsPerTake: k.consumerMaxSkipsPerTake,
    readMaxBytes: k.readMaxBytes,
  });
  const rpcMetrics = createRpcMetrics(metrics.registry);
  const security = await openSecurity(config, logger, nowMs, clustered);
  // Channels open lazily, on the first call to a peer.
  const peers = createPeerPool({
    maxMessageBytes: k.rpcMaxMessageBytes,
    commitRequestBytes: k.rpcCommitRequestBytes,
    readTimeoutMs: k.rpcReadTimeoutMs,
    defaultDeadlineMs: k.rpcDefaultDeadlineMs,
    keepaliveTimeMs: k.rpcKeepaliveTimeMs,
    keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
    reconnectBackoffInitialMs: k.rpcReconnectBackoffInitialMs,
    reconnectBackoffMaxMs: k.rpcReconnectBackoffMaxMs,
    flowControlWindowBytes: k.rpcFlowControlWindowBytes,
    retryAfterSeconds: k.retryAfterSeconds,
    metrics: rpcMetrics,
    interceptors: security.rpcClientInterceptors,
    ...(security.rpcTls ? { credentials: security.rpcTls.channel } : {}),
  });
  metastore.onChange(peerMembershipSync(peers, () => metastore.members()));
  // Stalled lanes' records leave the WAL for here so the rest keeps flowing (dispatch/parked-store.ts).
  // Parked records are "still in the WAL" only from the first seq the WAL holds at or above
  // its checkpoint: a checkpoint reset to 1 (malformed file) sits below deleted segments.
  const walCheckpoint = wal.stats().checkpoint;
  const walHeld = await wal.read(walCheckpoint, 1, Number.MAX_SAFE_INTEGER);
  const parked = await openParkedStore({
    dir: join(config.dataDir, "parked"),
    incarnation: wal.incarnation,
    walCheckpoint: walHeld[0]?.seq ?? Math.max(walCheckpoint, wal.stats().nextSeq),
    maxBytes: defaultParkedMaxBytes,
    logger: logger.child({ component: "parked" }),
  });
  // The done seqs above the checkpoint, so a restart does not dispatch them again (dispatch/done-set-store.ts).
  const doneSet = await openDoneSetStore({
    dir: join(config.dataDir, "dispatch"),
    incarnation: wal.incarnation,
    checkpoint: walCheckpoint,
    nextSeq: wal.stats().nextSeq,
    logger: logger.child({ component: "dispatch" }),
  });
  // Fan-out cursors of the parent partitions this node owns (fanout/engine.ts).
  const fanout = new FanoutEngine({
    nodeId: config.nodeId,
    metastore,
    logs,
    wal,
    registry: metrics.registry,
    logger: logger.child({ component: "fanout" }),
    nowMs,
  });
  const dispatcher = createDispatcher({
    parked,
    doneSet,
    wal,
    destinations: withCommitWaiters(
      clusterDestinations({
        nodeId: config.nodeId,
        metastore,
        logs,
        peers,
        onLocalCommitted: (topic, partition) => {
          consumers.notifyCommitted(topic, partition);
          fanout.notifyCommitted(topic, partition);
        },
        retryAfterSeconds: k.retryAfterSeconds,
        ...(opts.testHooks?.destinations ? { hooks: opts.testHooks.destinations } : {}),
      }),
      commitWaiters,
      commitOutcomeMetrics(metrics.registry),
    ),
    incarnation: wal.incarnation,
    options: config.dispatch,
    logger: logger.child({ component: "dispatch" }),
    metrics: dispatchMetricsSink(metrics),
    nowMs,
  });

  const moveTiming: MoveTiming = {
    chunkBytes: k.moveChunkBytes,
    catchUp: {
      closeEnoughBytes: k.moveCloseEnoughBytes,
      maxRounds: k.moveMaxCatchUpRounds,
      maxStalledRounds: k.moveMaxStalledRounds,
    },
    freezeTtlMs: k.moveFreezeTtlMs,
    renewIntervalMs: k.moveRenewIntervalMs,
    retryMs: k.moveRetryMs,
    ...opts.moveTiming,
  };
  // Partition moves (cluster mode): the source side serves copies and
  // freezes; the destination side runs moves the operator asks for.
  const partitions = createPartitionAccess({
    nodeId: config.nodeId,
    metastore,
    logs,
    peers,
    retryAfterSeconds: k.retryAfterSeconds,
  });
  const moveSource = clustered
    ? new MoveSource({
        nodeId: config.nodeId,
        metastore,
        logs,
        consumers,
        ownerVerify: (topic, partition, segments) => {
          const owner = metastore.members().find((m) => m.id === metastore.ownerOf(topic, partition));
          const address = owner === undefined ? undefined : clusterAddressOf(owner);
          if (address === undefined)
            return Promise.reject(new Error(`the owner of ${topic}/${partition} has no cluster address`));
          return peers.peer(address).moveVerify({ topic, partition, segments });
        },
        maxFreezeTtlMs: Math.max(k.moveFreezeTtlMs, moveTiming.freezeTtlMs),
        maxFetchBytes: k.moveChunkBytes,
        deleteDelayMs: opts.moveTiming?.sourceDeleteDelayMs ?? k.moveSourceDeleteDelayMs,
        logger: logger.child({ component: "move-source" }),
      })
    : undefined;
  const moves = clustered
    ? new MoveManager({
        nodeId: config.nodeId,
        dataDir: config.dataDir,
        metastore,
        logs,
        consumers,
        peers,
        onInstalled: (topic, partition) => moveSource?.forget(topic, partition),
        log: {
          segmentBytes: config.log.segmentBytes,
          indexIntervalBytes: config.log.indexIntervalBytes,
          maxFrameBytes: config.log.maxFrameBytes,
        },
        timing: moveTiming,
        logger: logger.child({ component: "moves" }),
      })
    : undefined;
  await moves?.recover();
  await moveSource?.resume();
  // A Decommissioning member refuses new produce (clients go elsewhere) but
  // keeps dispatching its WAL and serving reads until it owns nothing. A
  // Removed one refuses too: the operator judged its WAL empty and is about
  // to delete its pod (and maybe its volume), so a 202 now would be a record
  // only a SIGTERM drain stands between and loss.
  const decommissioning = (): boolean =>
    metastore
      .members()
      .some((m) => m.id === config.nodeId && (m.state === "Decommissioning" || m.state === "Removed"));

  let ready = false;
  let draining = false;
  /** A refusal of forwarded produce that provably stored nothing (the caller may try another peer). */
  const ingestRefused = (message: string): Error =>
    Object.assign(new Error(message), { code: "INGEST_REFUSED" });
  const services: BrokerServices = {
    config,
    nodeId: config.nodeId,
    metastore,
    ingress: wal,
    logs,
    partitions,
    // Cluster mode: consume/ack of a peer's partition go to its owner.
    consumers: clustered
      ? createClusterConsumers({
          nodeId: config.nodeId,
          metastore,
          local: consumers,
          peers,
          retryAfterSeconds: k.retryAfterSeconds,
          reprobeIntervalMs: k.consumeReprobeIntervalMs,
          nowMs: monoMs,
          logger: logger.child({ component: "consume" }),
        })
      : consumers,
    ...(moves !== undefined && moveSource !== undefined
      ? {
          moves: {
            start: (t: string, p: number, from: string) => moves.start(t, p, from),
            get: (t: string, p: number) => moves.get(t, p),
            list: () => moves.list(),
            cancel: (t: string, p: number) => moves.cancel(t, p),
            heldCopies: () => moveSource.heldCopies(),
          },
        }
      : {}),
    lifecycle: {
      ready: () => ready && !draining,
      draining: () => draining || decommissioning(),
      startDrain: (reason) => {
        if (!draining)
          logger.info({ reason, pending: wal.stats().pendingRecords }, "draining: produce refused");
        draining = true;
      },
      cancelDrain: () => {
        if (draining) logger.info("drain cancelled: produce accepted again");
        draining = false;
      },
      waitDrained: (timeoutMs) => dispatcher.drain(timeoutMs),
    },
    ...(clustered
      ? {
          forwardProduce: createProduceForwarder({
            nodeId: config.nodeId,
            members: () => metastore.members(),
            ingest: (address, records, deadlineMs) =>
              peers.peer(address).ingest({ records, from_node: config.nodeId }, deadlineMs),
            nowMs: monoMs,
            timeoutMs: k.rpcDefaultDeadlineMs,
          }),
        }
      : {}),
    dispatch: dispatcher,
    metrics,
    nowMs,
    ...(producerRegistry !== undefined ? { producerRegistry } : {}),
    commitWaiters,
    fanout,
  };
  const app = buildApp(services, logger, security.appOptions(metrics.registry));
  dispatcher.start();
  consumers.start();

  const retentionPass = async () => {
    const policies = new Map(
      metastore
        .listTopics()
        .map((t) => [t.name, { retentionMs: t.retention_ms, maxBytes: t.retention_bytes }]),
    );
    const deleted = await logs.retentionPass(policies);
    if (deleted > 0) logger.info({ segments: deleted }, "retention removed sealed segments");
  };
  const retentionTimer = setInterval(() => {
    retentionPass().catch((err: unknown) => logger.error({ err }, "retention pass failed"));
  }, config.log.retentionCheckIntervalMs);
  retentionTimer.unref();

  const cluster = clustered
    ? await startClusterServer(
        {
          nodeId: config.nodeId,
          metastore,
          logs,
          onCommitted: (topic, partition) => {
            consumers.notifyCommitted(topic, partition);
            fanout.notifyCommitted(topic, partition);
          },
          consumers,
          consumeMaxWaitMs: config.consume.maxWaitMs,
          ...(moveSource !== undefined ? { moves: moveSource } : {}),
          ...(producerRegistry !== undefined
            ? {
                confirmProducerEpoch: async (req: {
                  producer_id: string;
                  epoch: number;
                  from_node: string;
                }) => {
                  const held = await producerRegistry.confirmEpoch(req.producer_id, req.epoch);
                  const fields = { producer: req.producer_id, epoch: req.epoch, held, from: req.from_node };
                  // Not backed by the store even after a fresh read: the asker is
                  // confused (another registry, a forged call); its barrier waits out the lease.
                  if (held === undefined || held < req.epoch)
                    logger.warn(
                      fields,
                      "ConfirmProducerEpoch for an epoch the producer registry does not hold",
                    );
                  else logger.debug(fields, "producer epoch confirmed for a re-init's barrier");
                  return { epoch: held ?? 0, membership_epoch: metastore.membershipEpoch?.() ?? 0 };
                },
              }
            : {}),
          // A draining peer's produce: into our WAL unless we refuse produce ourselves.
          ingest: async (records, from) => {
            if (services.lifecycle.draining() || !ready || wal.stats().poisoned)
              throw ingestRefused(
                `node ${config.nodeId} refuses produce itself (draining, starting or WAL failed)`,
              );
            const input = fromIngestRecords(records);
            for (const r of input) {
              const t = metastore.getTopic(r.topic);
              if (t === undefined || r.partition >= t.partitions)
                throw ingestRefused(`node ${config.nodeId} does not know ${r.topic}/${r.partition}`);
            }
            await wal.append(input);
            metrics.ingestedForPeers.inc(input.length);
            logger.debug({ from, records: input.length }, "stored produce forwarded by a draining peer");
            return input.length;
          },
          adminStatus: () => {
            const w = wal.stats();
            const owned: Array<{ topic: string; partition: number }> = [];
            for (const t of metastore.listTopics()) {
              for (let p = 0; p < t.partitions; p++) {
                if (metastore.ownerOf(t.name, p) === config.nodeId)
                  owned.push({ topic: t.name, partition: p });
              }
            }
            return {
              node_id: config.nodeId,
              ready: services.lifecycle.ready(),
              draining,
              wal_pending_records: w.pendingRecords + parked.size,
              checkpoint_seq: w.checkpoint,
              last_accepted_seq: w.nextSeq - 1,
              owned_partitions: owned,
            };
          },
          readMaxRecords: k.readMaxRecords,
          readMaxBytes: k.readMaxBytes,
          metrics: rpcMetrics,
          logger: logger.child({ component: "rpc" }),
          ...(opts.testHooks?.server ? { hooks: opts.testHooks.server } : {}),
        },
        {
          host: config.cluster.host,
          port: config.cluster.port,
          maxMessageBytes: k.rpcMaxMessageBytes,
          keepaliveTimeMs: k.rpcKeepaliveTimeMs,
          keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
          shutdownGraceMs: k.rpcShutdownGraceMs,
          interceptors: security.rpcServerInterceptors,
          ...(security.rpcTls ? { credentials: security.rpcTls.server } : {}),
        },
      )
    : undefined;
  if (cluster !== undefined) logger.info({ address: cluster.address }, "cluster RPC listening");

  await app.listen({ host: config.http.host, port: config.http.port });
  const addr = app.server.address();
  const httpAddress =
    typeof addr === "object" && addr !== null ? `${addr.address}:${addr.port}` : String(addr);
  security.startTlsReload();
  ready = true;
  fanout.start();

  let shuttingDown: Promise<boolean> | undefined;
  const shutdown = async (): Promise<boolean> => {
    // Order matters: refuse new produce first, then move what the WAL holds
    // into the partition logs, then stop serving and close storage.
    services.lifecycle.startDrain("shutdown");
    clearInterval(retentionTimer);
    // Before the drain: a cursor's last batch lands in the WAL the drain then empties.
    await fanout.close();
    const drained = await services.lifecycle.waitDrained(config.drainTimeoutMs);
    if (!drained)
      logger.warn({ pending: wal.stats().pendingRecords }, "drain timed out; the WAL keeps the rest");
    await dispatcher.stop();
    await closeRest();
    return drained;
  };
  const closeRest = async (): Promise<void> => {
    // Peers' commits to our partitions are served until here (our logs are
    // still open); in-flight ones finish within the RPC grace.
    await moves?.close();
    moveSource?.close();
    await cluster?.close();
    // Long-polls answer 204 now so app.close() does not wait for them; the
    // final frontier flush runs once no request can settle a lease any more.
    consumers.beginClose();
    await app.close();
    // Only now: produce still arriving while the HTTP server closed was
    // forwarded to a peer over these channels.
    peers.close();
    await consumers.close();
    await logs.closeAll();
    await wal.close();
    await producerRegistry?.close();
    await metastore.close();
    security.close();
    await lock.release();
  };
  const crash = async (): Promise<void> => {
    clearInterval(retentionTimer);
    cluster?.kill();
    await fanout.close();
    await dispatcher.stop();
    await closeRest();
  };
  return {
    httpAddress,
    app,
    shutdown: () => {
      shuttingDown ??= shutdown();
      return shuttingDown;
    },
    cluster,
    crash: async () => {
      shuttingDown ??= crash().then(() => false);
      await shuttingDown;
    },
  };
}
