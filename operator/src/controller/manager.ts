import type { KubeConfig, KubernetesObject, V1Pod, V1StatefulSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { NaradCluster, NaradTopic, NaradUser } from "../../../packages/api/src/v1alpha1/types.ts";
import { guardedBrokerClient } from "../broker-client/guarded.ts";
import type { BrokerClient } from "../broker-client/types.ts";
import {
  API_GROUP_VERSION,
  CLUSTER_KIND,
  CLUSTER_PLURAL,
  EVENT_CACHE_MAX_ENTRIES,
  LABEL_CLUSTER,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  NODE_ZONE_CACHE_MS,
  QUEUE_BACKOFF_BASE_MS,
  QUEUE_BACKOFF_MAX_MS,
  QUEUE_MAX_KEYS,
  QUEUE_WORKERS,
  RESYNC_INTERVAL_MS,
  TOPIC_KIND,
  TOPIC_PLURAL,
  UNSYNCED_REQUEUE_MS,
  USER_KIND,
  USER_PLURAL,
} from "../constants.ts";
import { AbortedError, apiMessage, guardedApi, type KubeApi } from "../kube/api.ts";
import type { Clock, TimerHandle } from "../kube/clock.ts";
import { EventRecorder } from "../kube/events.ts";
import type { InformerEvent } from "../kube/informer.ts";
import { KindInformers, type KindSpec } from "../kube/informers.ts";
import { clientNodeZones } from "../kube/node-zones.ts";
import { ClientNodeStorageApi, guardedStorageApi, type StorageApi } from "../kube/storage-api.ts";
import { WorkQueue } from "../kube/work-queue.ts";
import { type ReconcileResult, runWorkers } from "../kube/workers.ts";
import type { OperatorMetrics, ReconcileKind } from "../metrics.ts";
import { reconcileCluster } from "./cluster/reconcile.ts";
import {
  type Caches,
  ControllerMemory,
  type NodeZones,
  type OwnedKind,
  objectKey,
  type ReconcileDeps,
} from "./deps.ts";
import { type ClusterSeen, route } from "./routing.ts";
import { reconcileTopic } from "./topic/reconcile.ts";
import { mirrorCluster } from "./user/mirror.ts";
import { reconcileUser } from "./user/reconcile.ts";

// Wires informers to two keyed work queues (clusters, topics) and runs the
// reconcilers. Informers run on every replica (so a standby has warm caches
// and is "ready"); queues and workers exist only while this replica leads,
// and a lost lease aborts them at once: in-flight reconciles can no longer
// write (guardedApi), queued keys are dropped, and the next term starts from
// a full enqueue of the caches.

const OWNED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

const KINDS = {
  clusters: {
    name: "naradclusters",
    apiVersion: API_GROUP_VERSION,
    kind: CLUSTER_KIND,
    plural: CLUSTER_PLURAL,
  },
  topics: { name: "naradtopics", apiVersion: API_GROUP_VERSION, kind: TOPIC_KIND, plural: TOPIC_PLURAL },
  users: { name: "naradusers", apiVersion: API_GROUP_VERSION, kind: USER_KIND, plural: USER_PLURAL },
  statefulSets: {
    name: "statefulsets",
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    plural: "statefulsets",
    labelSelector: OWNED_SELECTOR,
  },
  pods: { name: "pods", apiVersion: "v1", kind: "Pod", plural: "pods", labelSelector: LABEL_CLUSTER },
} satisfies Record<string, KindSpec>;

const OWNED_KINDS: ReadonlyArray<[OwnedKind, KindSpec]> = [
  [
    "ServiceAccount",
    { name: "serviceaccounts", apiVersion: "v1", kind: "ServiceAccount", plural: "serviceaccounts" },
  ],
  ["Role", { name: "roles", apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", plural: "roles" }],
  [
    "RoleBinding",
    {
      name: "rolebindings",
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      plural: "rolebindings",
    },
  ],
  ["ConfigMap", { name: "configmaps", apiVersion: "v1", kind: "ConfigMap", plural: "configmaps" }],
  ["Service", { name: "services", apiVersion: "v1", kind: "Service", plural: "services" }],
  [
    "PodDisruptionBudget",
    {
      name: "poddisruptionbudgets",
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      plural: "poddisruptionbudgets",
    },
  ],
];

export interface ManagerOptions {
  kc: KubeConfig;
  api: KubeApi;
  /** Defaults to client-node over kc. */
  storage?: StorageApi;
  /** Node zone labels for replica placement; defaults to client-node over kc (cached). */
  zones?: NodeZones;
  brokers: BrokerClient;
  clock: Clock;
  log: Logger;
  metrics: OperatorMetrics;
  watchNamespaces: readonly string[];
  defaultBrokerImage: string | undefined;
}

interface Term {
  ac: AbortController;
  clusters: WorkQueue;
  topics: WorkQueue;
  /** NaradUsers. */
  users: WorkQueue;
  /** NaradClusters whose API users are mirrored as NaradUsers (controller/user/mirror.ts). */
  mirrors: WorkQueue;
  done: Promise<void>;
  resync: TimerHandle | undefined;
}

export class Manager {
  readonly #o: ManagerOptions;
  readonly #log: Logger;
  readonly #informers: KindInformers<KubernetesObject>[] = [];
  readonly caches: Caches;
  readonly #memory = new ControllerMemory();
  readonly #recorder: EventRecorder;
  readonly #zones: NodeZones;
  readonly #seen = new Map<string, ClusterSeen>();
  #term: Term | undefined;
  /** The last term's workers, finishing; a new term waits for them. */
  #ending: Promise<void> = Promise.resolve();
  /** Bumped by every start/stop: a start that waited for the old term checks it is still wanted. */
  #generation = 0;

  constructor(opts: ManagerOptions) {
    this.#o = opts;
    this.#log = opts.log.child({ component: "manager" });
    this.#zones = opts.zones ?? clientNodeZones(opts.kc, opts.clock, NODE_ZONE_CACHE_MS);
    const make = <T extends KubernetesObject>(spec: KindSpec): KindInformers<T> => {
      const inf = new KindInformers<T>({
        kc: opts.kc,
        spec,
        namespaces: opts.watchNamespaces,
        clock: opts.clock,
        onEvent: (s, ev) => this.#onEvent(s, ev as InformerEvent<KubernetesObject>),
      });
      this.#informers.push(inf as unknown as KindInformers<KubernetesObject>);
      return inf;
    };
    const owned = new Map<OwnedKind, KindInformers<KubernetesObject>>();
    for (const [kind, spec] of OWNED_KINDS) owned.set(kind, make({ ...spec, labelSelector: OWNED_SELECTOR }));
    this.caches = {
      clusters: make<NaradCluster>(KINDS.clusters),
      topics: make<NaradTopic>(KINDS.topics),
      users: make<NaradUser>(KINDS.users),
      statefulSets: make<V1StatefulSet>(KINDS.statefulSets),
      pods: make<V1Pod>(KINDS.pods),
      owned,
    };
    this.#recorder = new EventRecorder({
      // Events only while leading, through the same guard as every write.
      sink: () => (this.#term === undefined ? undefined : guardedApi(opts.api, this.#term.ac.signal)),
      clock: opts.clock,
      maxEntries: EVENT_CACHE_MAX_ENTRIES,
      onError: (err, reason) => {
        if (!(err instanceof AbortedError))
          this.#log.warn({ reason, err: apiMessage(err) }, "could not record Event");
      },
    });
  }

  /** Starts every informer (on every replica, leader or not). */
  start(): void {
    for (const i of this.#informers) i.start();
  }

  /** Per-informer sync state, for /readyz. */
  syncState(): Record<string, boolean> {
    return Object.fromEntries(this.#informers.map((i) => [i.spec.name, i.synced]));
  }

  get leading(): boolean {
    return this.#term !== undefined;
  }

  /** Starts a term once the previous one has finished; resolves when it runs (or was cancelled meanwhile). */
  async startLeading(): Promise<void> {
    if (this.#term !== undefined) return;
    const generation = ++this.#generation;
    await this.#ending;
    if (generation !== this.#generation || this.#term !== undefined) return;
    this.#begin();
  }

  #begin(): void {
    // Down clocks from an earlier term are not evidence.
    this.#memory.startTerm();
    const { clock, metrics } = this.#o;
    const ac = new AbortController();
    const depth = () =>
      metrics.queueDepth.set(
        (term?.clusters.depth ?? 0) +
          (term?.topics.depth ?? 0) +
          (term?.users.depth ?? 0) +
          (term?.mirrors.depth ?? 0),
      );
    const queue = (name: string) =>
      new WorkQueue({
        clock,
        backoffBaseMs: QUEUE_BACKOFF_BASE_MS,
        backoffMaxMs: QUEUE_BACKOFF_MAX_MS,
        maxKeys: QUEUE_MAX_KEYS,
        onDrop: (key) =>
          this.#log.warn({ queue: name, key }, "work queue full; dropping key until the next resync"),
        onDepth: depth,
      });
    const clusters = queue("clusters");
    const topics = queue("topics");
    const users = queue("users");
    const mirrors = queue("mirrors");
    const deps: ReconcileDeps = {
      caches: this.caches,
      api: guardedApi(this.#o.api, ac.signal),
      storage: guardedStorageApi(this.#o.storage ?? new ClientNodeStorageApi(this.#o.kc), ac.signal),
      recorder: this.#recorder,
      brokers: guardedBrokerClient(this.#o.brokers, ac.signal),
      clock,
      log: this.#o.log,
      memory: this.#memory,
      defaultBrokerImage: this.#o.defaultBrokerImage,
      metrics: this.#o.metrics,
      zones: this.#zones,
    };
    const done = Promise.all([
      runWorkers(
        clusters,
        QUEUE_WORKERS,
        (key) => this.#whenSynced(key, () => reconcileCluster(key, deps)),
        ac.signal,
        {
          onResult: (key, ms, err, retry) => this.#observe("NaradCluster", key, ms, err, retry),
        },
      ),
      runWorkers(
        topics,
        QUEUE_WORKERS,
        (key) => this.#whenSynced(key, () => reconcileTopic(key, deps)),
        ac.signal,
        {
          onResult: (key, ms, err, retry) => this.#observe("NaradTopic", key, ms, err, retry),
        },
      ),
      runWorkers(
        users,
        QUEUE_WORKERS,
        (key) => this.#whenSynced(key, () => reconcileUser(key, deps)),
        ac.signal,
        {
          onResult: (key, ms, err, retry) => this.#observe("NaradUser", key, ms, err, retry),
        },
      ),
      runWorkers(
        mirrors,
        1,
        (key) => this.#whenSynced(key, () => mirrorCluster(key, deps, (k) => users.add(k))),
        ac.signal,
        { onResult: (key, ms, err, retry) => this.#observe("NaradUserMirror", key, ms, err, retry) },
      ),
    ]).then(() => undefined);
    const term: Term = { ac, clusters, topics, users, mirrors, done, resync: undefined };
    this.#term = term;
    metrics.leader.set(1);
    this.#log.info("leading: reconciling");
    this.#resync(term);
  }

  /** Stops reconciling now: writes are refused from this instant, workers drain. */
  async stopLeading(): Promise<void> {
    this.#generation++;
    const term = this.#term;
    if (term === undefined) return this.#ending;
    this.#term = undefined;
    term.ac.abort();
    term.resync?.cancel();
    term.clusters.shutDown();
    term.topics.shutDown();
    term.users.shutDown();
    term.mirrors.shutDown();
    this.#o.metrics.leader.set(0);
    this.#o.metrics.queueDepth.set(0);
    // Another replica leads now and exports these; stale copies here would keep alerts firing.
    this.#o.metrics.underReplicatedPartitions.reset();
    this.#o.metrics.offlinePartitions.reset();
    this.#memory.topicGauges.clear();
    this.#log.info("not leading: reconciling stopped");
    const ending = term.done.catch(() => undefined);
    this.#ending = ending;
    await ending;
  }

  async stop(): Promise<void> {
    await this.stopLeading();
    await this.#recorder.flush();
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  /**
   * A reconcile against a cache that has not listed yet would see owned
   * objects as missing (and "create" them, and say so); wait for the sync.
   */
  async #whenSynced(key: string, run: () => Promise<ReconcileResult>): Promise<ReconcileResult> {
    const pending = this.#informers.filter((i) => !i.synced).map((i) => i.spec.name);
    if (pending.length === 0) return run();
    this.#log.debug({ key, pending }, "not reconciling yet: informers not synced");
    return { requeueAfterMs: UNSYNCED_REQUEUE_MS };
  }

  /** Enqueue everything cached, now and every RESYNC_INTERVAL_MS (level-triggered safety net). */
  #resync(term: Term): void {
    if (this.#term !== term) return;
    for (const c of this.caches.clusters.list()) {
      term.clusters.add(keyOf(c));
      term.mirrors.add(keyOf(c));
    }
    for (const u of this.caches.users.list()) term.users.add(keyOf(u));
    for (const t of this.caches.topics.list()) term.topics.add(keyOf(t));
    term.resync = this.#o.clock.after(RESYNC_INTERVAL_MS, () => this.#resync(term));
  }

  #observe(kind: ReconcileKind, key: string, ms: number, err: unknown, retryMs: number | undefined): void {
    const outcome = err !== undefined ? "error" : retryMs !== undefined ? "requeue" : "success";
    this.#o.metrics.observeReconcile(kind, ms / 1000, outcome);
    const fields = { kind, key, durationMs: Math.round(ms), result: outcome, retryInMs: retryMs };
    if (err === undefined) this.#log.debug(fields, "reconciled");
    else if (err instanceof AbortedError) this.#log.info(fields, "reconcile aborted: no longer leading");
    else this.#log.warn({ ...fields, err: apiMessage(err) }, "reconcile failed; retrying with backoff");
  }

  #onEvent(spec: KindSpec, ev: InformerEvent<KubernetesObject>): void {
    if (ev.type === "synced") {
      this.#log.info({ informer: spec.name }, "informer synced");
      return;
    }
    if (ev.type === "error") {
      this.#log.warn(
        { informer: spec.name, err: apiMessage(ev.error), restartInMs: ev.restartInMs },
        "informer failed; restarting",
      );
      return;
    }
    const obj = ev.object;
    const key = keyOf(obj);
    if (spec.kind === USER_KIND) {
      this.#term?.users.add(key);
      return;
    }
    const r = route(spec.kind, ev.type, obj, this.#seen.get(key), (ns, cluster) =>
      this.caches.topics.list(ns).filter((t) => t.spec?.cluster === cluster),
    );
    if (spec.kind === CLUSTER_KIND) {
      if (r.seen === undefined) this.#seen.delete(key);
      else this.#seen.set(key, r.seen);
    }
    const term = this.#term;
    if (term === undefined) return;
    for (const k of r.clusters) term.clusters.add(k);
    for (const k of r.topics) term.topics.add(k);
    if (spec.kind === CLUSTER_KIND) term.mirrors.add(key);
  }
}

function keyOf(o: KubernetesObject): string {
  return objectKey(o.metadata?.namespace ?? "", o.metadata?.name ?? "");
}
