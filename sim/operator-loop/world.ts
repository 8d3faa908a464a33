// The operator in the loop: the real NaradCluster reconcile (controller/
// cluster/reconcile.ts, every planner it calls unchanged) runs against a
// simulated Kubernetes and simulated brokers, one pass per simulated second.
//
//   - The API server is FakeKube (truth). The operator reads through caches
//     that lag it: refreshed once a step, pinned for a while by a silent
//     stale-view fault, frozen and reported unhealthy during an API brownout
//     (writes then fail 503).
//   - The StatefulSet controller recreates missing pods of ordinals below
//     spec.replicas at the template's revision and deletes pods above it (and
//     their volumes with whenScaled Delete). The kubelet turns a pod Ready
//     when its broker serves, and not Ready when it is down, frozen, draining
//     or decommissioning; a node fault flips Ready to False while the broker
//     is fine (reason NodeNotReady, or none).
//   - Brokers (brokers.ts) take produce while Ready, dispatch their WAL,
//     copy partitions for moves.
//   - Leadership: a lease lost in the middle of a pass aborts that term's
//     signal (guardedApi / guardedBrokerClient, as manager.ts wires them); the
//     next term starts after a gap, with fresh memory (another replica) or the
//     same memory's startTerm() (this replica again).
//
// The invariants (invariants.ts) are checked against the truth at the moment
// each action happens.

import type { KubernetesObject, V1Pod, V1StatefulSet } from "@kubernetes/client-node";
import { pino } from "pino";
import type { Prng } from "../../broker/src/testing/prng.ts";
import { guardedBrokerClient } from "../../operator/src/broker-client/guarded.ts";
import { reconcileCluster } from "../../operator/src/controller/cluster/reconcile.ts";
import {
  type Caches,
  ControllerMemory,
  type OwnedKind,
  type ReconcileDeps,
} from "../../operator/src/controller/deps.ts";
import { ApiError, FakeKube, type MemoryKind } from "../../operator/src/controller/fake-kube.ts";
import { guardedApi, type KubeApi } from "../../operator/src/kube/api.ts";
import { MemoryRecorder } from "../../operator/src/kube/events.ts";
import type { KindCache, KindSpec } from "../../operator/src/kube/informers.ts";
import { ManualClock } from "../../operator/src/kube/manual-clock.ts";
import { MemoryStorageApi } from "../../operator/src/kube/storage-api.ts";
import type { CacheHealth } from "../../operator/src/plan/observation.ts";
import type { NaradCluster, NaradTopic } from "../../packages/api/src/v1alpha1/types.ts";
import { type SimBroker, SimBrokers } from "./brokers.ts";

export const NS = "sim";
export const CLUSTER = "demo";
export const TOPIC = "orders";

/** A cache the operator reads: a snapshot of the truth, refreshed by the world. */
class LaggedKind<T extends KubernetesObject> implements KindCache<T> {
  readonly spec: KindSpec;
  readonly synced = true;
  health: CacheHealth[];
  #snapshot = new Map<string, T>();
  readonly #truth: MemoryKind<T>;
  constructor(truth: MemoryKind<T>) {
    this.#truth = truth;
    this.spec = truth.spec;
    this.health = [{ name: truth.spec.name, healthy: true, recoveredAtMs: undefined }];
    this.refresh();
  }
  refresh(): void {
    this.#snapshot = new Map([...this.#truth.objects].map(([k, v]) => [k, structuredClone(v)]));
  }
  get(namespace: string, name: string): T | undefined {
    return this.#snapshot.get(`${namespace}/${name}`);
  }
  list(namespace?: string): T[] {
    return [...this.#snapshot.values()].filter(
      (o) => namespace === undefined || o.metadata?.namespace === namespace,
    );
  }
}

const WRITES = new Set(["apply", "delete", "evictPod", "patchStatus", "setFinalizers", "createIfAbsent"]);

export interface WorldSettings {
  replicas: number;
  partitions: number;
  whenScaled: "Delete" | "Retain";
  downGraceSeconds: number;
  gateTimeoutSeconds: number;
  drainTimeoutSeconds: number;
}

/** What the invariants are told, at the moment it happens. */
export interface WorldObserver {
  beforeEvict(pod: V1Pod, broker: SimBroker): void;
  brokerCall(term: number, what: string, broker: string): void;
  kubeWrite(term: number, what: string): void;
  moveCancelled(topic: string, partition: number, to: string): void;
  volumeDeleted(broker: SimBroker): void;
}

export class OperatorLoopWorld {
  readonly clock = new ManualClock(Date.parse("2026-12-01T00:00:00Z"));
  readonly kube = new FakeKube(() => this.clock.now());
  readonly brokers = new SimBrokers();
  readonly recorder = new MemoryRecorder();
  readonly rng: Prng;
  readonly settings: WorldSettings;
  readonly trace: string[] = [];
  observer: WorldObserver | undefined;

  readonly #lagged: LaggedKind<KubernetesObject>[] = [];
  readonly caches: Caches;
  /** Caches are not refreshed before this world time (a stale view or a brownout). */
  cachesPinnedUntilMs = 0;
  /** Writes fail 503 and caches report unhealthy until this time. */
  brownoutUntilMs = 0;
  #inBrownout = false;
  /** Pod name → the node fault's Ready=False lasts until (and with which reason). */
  readonly nodeNotReady = new Map<string, { untilMs: number; reason: string | undefined }>();
  /** Broker id → world time its crashed process restarts in the same pod. */
  readonly restartAtMs = new Map<string, number>();
  /** Broker id → world time its freeze ends. */
  readonly unfreezeAtMs = new Map<string, number>();
  /** Ordinal → the StatefulSet controller recreates its pod no earlier than this. */
  readonly recreateAtMs = new Map<number, number>();
  /** "topic/partition" → members holding a complete copy. */
  readonly copies = new Map<string, Set<string>>();
  #podSeq = 0;
  #eventsSeen = 0;

  // Leadership.
  term = 1;
  #ac = new AbortController();
  #memory = new ControllerMemory();
  /** No pass runs before this time (the gap between two leadership terms). */
  leaderGapUntilMs = 0;
  /** Lose the lease after this many more operator side effects, within the current pass. */
  leaseLossAfter: number | undefined;
  deps: ReconcileDeps;

  constructor(rng: Prng, settings: WorldSettings) {
    this.rng = rng;
    this.settings = settings;
    const lag = <T extends KubernetesObject>(k: MemoryKind<T>): LaggedKind<T> => {
      const l = new LaggedKind(k);
      this.#lagged.push(l as unknown as LaggedKind<KubernetesObject>);
      return l;
    };
    const owned = new Map<OwnedKind, KindCache<KubernetesObject>>();
    for (const [kind, store] of this.kube.owned) owned.set(kind, lag(store));
    this.caches = {
      clusters: lag(this.kube.clusters),
      topics: lag(this.kube.topics),
      users: lag(this.kube.users),
      statefulSets: lag(this.kube.statefulSets),
      pods: lag(this.kube.pods),
      owned,
    };
    this.kube.evictionBudget = (ns, name) => this.#budget(ns, name);
    this.brokers.ownerOf = (topic, p) => this.owner(topic, p);
    this.brokers.ownedBy = (id) => this.ownedPartitions(id);
    this.deps = this.#newDeps();
    this.#createCluster();
  }

  now(): number {
    return this.clock.now();
  }

  log(msg: string): void {
    this.trace.push(`${((this.now() - Date.parse("2026-12-01T00:00:00Z")) / 1000).toFixed(0)}s ${msg}`);
  }

  cluster(): NaradCluster | undefined {
    return this.kube.clusters.get(NS, CLUSTER);
  }

  statefulSet(): V1StatefulSet | undefined {
    return this.kube.statefulSets.get(NS, CLUSTER);
  }

  topic(): NaradTopic | undefined {
    return this.kube.topics.get(NS, TOPIC);
  }

  owner(topic: string, partition: number): string | undefined {
    if (topic !== TOPIC) return undefined;
    return this.topic()?.status?.assignments?.find((a) => a.partition === partition)?.owner;
  }

  ownedPartitions(id: string): number {
    return (this.topic()?.status?.assignments ?? []).filter((a) => a.owner === id).length;
  }

  pod(ordinal: number): V1Pod | undefined {
    return this.kube.pods.get(NS, `${CLUSTER}-${ordinal}`);
  }

  podReady(pod: V1Pod | undefined): boolean {
    return pod?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
  }

  // ------------------------------------------------------------ setup

  #createCluster(): void {
    const s = this.settings;
    this.kube.create(this.kube.clusters, {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: CLUSTER, namespace: NS },
      spec: {
        replicas: s.replicas,
        image: "narad:1",
        storage: { reclaimPolicy: { whenScaled: s.whenScaled, whenDeleted: "Retain" } },
        rollout: {
          downGraceSeconds: s.downGraceSeconds,
          gateTimeoutSeconds: s.gateTimeoutSeconds,
          drainTimeoutSeconds: s.drainTimeoutSeconds,
        },
      },
    });
    const assignments = Array.from({ length: s.partitions }, (_, p) => ({
      partition: p,
      owner: `${CLUSTER}-${p % s.replicas}`,
    }));
    for (const a of assignments) this.copies.set(`${TOPIC}/${a.partition}`, new Set([a.owner]));
    const t = this.kube.create(this.kube.topics, {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: TOPIC, namespace: NS },
      spec: { cluster: CLUSTER, partitions: s.partitions },
    });
    this.kube.topics.put({ ...t, status: { phase: "Ready", assignments, assignmentEpoch: 1 } });
  }

  // ------------------------------------------------------------ the operator

  #newDeps(): ReconcileDeps {
    const term = this.term;
    const signal = this.#ac.signal;
    return {
      caches: this.caches,
      api: guardedApi(this.#worldApi(term), signal),
      storage: new MemoryStorageApi(),
      recorder: this.recorder,
      brokers: guardedBrokerClient(this.#observedBrokers(term), signal),
      clock: this.clock,
      log: pino({ level: "silent" }),
      memory: this.#memory,
      defaultBrokerImage: undefined,
    };
  }

  /** FakeKube as this term writes to it: observed, failing in a brownout, losing the lease on cue. */
  #worldApi(term: number): KubeApi {
    const kube = this.kube;
    return new Proxy(kube, {
      get: (target, prop, _recv) => {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== "function") return v;
        const name = String(prop);
        return (...args: unknown[]) => {
          if (WRITES.has(name)) {
            const what = `${name} ${describeWrite(name, args)}`;
            this.observer?.kubeWrite(term, what);
            if (this.#inBrownout) return Promise.reject(new ApiError(503, "the API server is unavailable"));
            if (name === "evictPod") {
              const pod = kube.pods.get(String(args[0]), String(args[1]));
              if (pod !== undefined) this.observer?.beforeEvict(pod, this.brokers.broker(String(args[1])));
            }
            const out = (v as (...a: unknown[]) => unknown).apply(target, args);
            this.#sideEffectDone();
            return out;
          }
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as KubeApi;
  }

  #observedBrokers(term: number) {
    const inner = this.brokers.client(term);
    const observe =
      <A extends unknown[], R>(what: string, f: (...a: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        const ep = args[0] as { id: string };
        this.observer?.brokerCall(term, what, ep.id);
        try {
          return await f(...args);
        } finally {
          this.#sideEffectDone();
        }
      };
    return {
      status: observe("status", inner.status.bind(inner)),
      drain: observe("drain", inner.drain.bind(inner)),
      cancelDrain: observe("cancelDrain", inner.cancelDrain.bind(inner)),
      deleteTopicData: observe("deleteTopicData", inner.deleteTopicData.bind(inner)),
      startMove: observe("startMove", inner.startMove.bind(inner)),
      getMove: observe("getMove", inner.getMove.bind(inner)),
      cancelMove: (async (ep, topic, partition, signal) => {
        this.observer?.brokerCall(term, "cancelMove", ep.id);
        try {
          const m = this.brokers.moves.get(`${ep.id}/${topic}/${partition}`);
          const wasLive = m !== undefined && m.state !== "done" && m.state !== "cancelled";
          await inner.cancelMove(ep, topic, partition, signal);
          if (wasLive) this.observer?.moveCancelled(topic, partition, ep.id);
        } finally {
          this.#sideEffectDone();
        }
      }) as typeof inner.cancelMove,
    };
  }

  /** After each side effect of the pass: lose the lease here if it is armed. */
  #sideEffectDone(): void {
    if (this.leaseLossAfter === undefined) return;
    if (this.leaseLossAfter-- > 0) return;
    this.leaseLossAfter = undefined;
    this.log(`lease lost by term ${this.term} in the middle of a pass`);
    this.#ac.abort(new Error("lease lost"));
    this.term++;
  }

  /** One operator pass, unless the leadership is in a gap. */
  async operatorPass(): Promise<void> {
    if (this.now() < this.leaderGapUntilMs) return;
    const termAtStart = this.term;
    try {
      await reconcileCluster(`${NS}/${CLUSTER}`, this.deps);
    } catch {
      // Failed steps show in status; the work queue would retry with backoff.
    }
    for (const e of this.recorder.events.slice(this.#eventsSeen)) this.log(`event ${e.reason}: ${e.message}`);
    this.#eventsSeen = this.recorder.events.length;
    if (this.term !== termAtStart) this.#startTerm();
  }

  /** A lease lost between passes (no pass in flight). */
  loseLeaseNow(gapMs: number): void {
    this.log(`lease lost by term ${this.term}, gap ${gapMs} ms`);
    this.#ac.abort(new Error("lease lost"));
    this.term++;
    this.#startTerm();
    this.leaderGapUntilMs = this.now() + gapMs;
  }

  #startTerm(): void {
    this.#ac = new AbortController();
    if (this.rng.bool()) this.#memory = new ControllerMemory();
    else this.#memory.startTerm();
    this.deps = this.#newDeps();
    this.log(`term ${this.term} starts`);
  }

  // ------------------------------------------------------------ physics

  #budget(ns: string, name: string): string | undefined {
    // maxUnavailable 1 over the cluster's pods, against the API server's own view.
    const replicas = this.statefulSet()?.spec?.replicas ?? 0;
    for (let i = 0; i < replicas; i++) {
      const pod = this.kube.pods.get(ns, `${CLUSTER}-${i}`);
      if (pod?.metadata?.name === name) continue;
      if (pod === undefined || !this.podReady(pod))
        return `Cannot evict pod as it would violate the pod's disruption budget (${CLUSTER}-${i} is not Ready)`;
    }
    return undefined;
  }

  /** Called once per step before the operator's pass. */
  async physics(): Promise<void> {
    const now = this.now();
    this.#brownout(now);
    for (const [id, at] of this.restartAtMs)
      if (now >= at) {
        this.restartAtMs.delete(id);
        const b = this.brokers.broker(id);
        if (b.podUid !== undefined) this.#startProcess(b, "its container restarted");
      }
    for (const [id, at] of this.unfreezeAtMs)
      if (now >= at) {
        this.unfreezeAtMs.delete(id);
        this.brokers.broker(id).frozen = false;
        this.log(`${id} resumes (SIGCONT)`);
      }
    for (const [pod, f] of this.nodeNotReady) if (now >= f.untilMs) this.nodeNotReady.delete(pod);
    this.#statefulSetController(now);
    this.#brokersWork(now);
    this.#movesWork(now);
    this.#kubelet(now);
    if (now >= this.cachesPinnedUntilMs && !this.#inBrownout) for (const c of this.#lagged) c.refresh();
  }

  #brownout(now: number): void {
    const inBrownout = now < this.brownoutUntilMs;
    if (inBrownout === this.#inBrownout) return;
    this.#inBrownout = inBrownout;
    for (const c of this.#lagged)
      c.health = [{ name: c.spec.name, healthy: !inBrownout, recoveredAtMs: inBrownout ? undefined : now }];
    this.log(inBrownout ? "API server brownout begins" : "API server back");
  }

  templateRevision(): string | undefined {
    const tpl = this.statefulSet()?.spec?.template;
    if (tpl === undefined) return undefined;
    const s = JSON.stringify(tpl);
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
    return `rev-${(h >>> 0).toString(16)}`;
  }

  #statefulSetController(now: number): void {
    const sts = this.statefulSet();
    if (sts === undefined) return;
    const rev = this.templateRevision()!;
    if (sts.status?.updateRevision !== rev) this.kube.setStatefulSetStatus(NS, CLUSTER, rev);
    const replicas = sts.spec?.replicas ?? 0;
    // Scale-down: the highest ordinal above spec.replicas goes first, with its volume (whenScaled).
    for (const pod of this.kube.pods.list(NS)) {
      const ordinal = Number(pod.metadata?.name?.slice(CLUSTER.length + 1));
      if (ordinal < replicas) continue;
      this.#podGone(pod, "the StatefulSet scaled down past it");
      const b = this.brokers.broker(pod.metadata!.name!);
      if (this.settings.whenScaled === "Delete") this.#deleteVolume(b);
    }
    for (let i = 0; i < replicas; i++) {
      if (this.pod(i) !== undefined) continue;
      const at = this.recreateAtMs.get(i);
      if (at === undefined) {
        this.recreateAtMs.set(i, now + this.rng.range(1, 4) * 1000);
        continue;
      }
      if (now < at) continue;
      this.recreateAtMs.delete(i);
      this.#createPod(i, rev);
    }
  }

  #createPod(ordinal: number, rev: string): void {
    const name = `${CLUSTER}-${ordinal}`;
    const uid = `pod-${name}-${++this.#podSeq}`;
    const ip = `10.0.0.${ordinal + 1}`;
    this.kube.pods.put({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: NS,
        uid,
        labels: { "narad.dev/cluster": CLUSTER, "controller-revision-hash": rev },
        creationTimestamp: new Date(this.now()),
      },
      status: {
        podIP: ip,
        conditions: [{ type: "Ready", status: "False", lastTransitionTime: new Date(this.now()) }],
      },
    });
    this.brokers.ipOwner.set(ip, name);
    const b = this.brokers.broker(name);
    b.podUid = uid;
    this.#startProcess(b, `pod created at ${rev}`);
  }

  #startProcess(b: SimBroker, why: string): void {
    b.process = "up";
    b.frozen = false;
    b.draining = false;
    b.startedAtMs = this.now();
    this.unfreezeAtMs.delete(b.id);
    // Copies in progress restart from their marker: an unknown move the operator starts again.
    for (const [k, m] of this.brokers.moves)
      if (m.to === b.id && m.state === "copying") this.brokers.moves.delete(k);
    this.log(`${b.id} broker starts (${why}), ${b.walPending} WAL records on its volume`);
  }

  /** A pod leaves the API server (evicted, force-deleted, scaled away): its process dies. */
  #podGone(pod: V1Pod, why: string): void {
    const name = pod.metadata!.name!;
    this.kube.pods.remove(NS, name);
    const b = this.brokers.broker(name);
    b.process = "down";
    b.podUid = undefined;
    this.restartAtMs.delete(name);
    this.nodeNotReady.delete(name);
    this.log(`${name} pod gone (${why}), ${b.walPending} WAL records stay on its volume`);
  }

  #deleteVolume(b: SimBroker): void {
    this.observer?.volumeDeleted(b);
    this.log(`${b.id} volume deleted (${b.walPending} WAL records on it)`);
    b.walPending = 0;
    for (const holders of this.copies.values()) holders.delete(b.id);
  }

  #brokersWork(now: number): void {
    const members = this.cluster()?.status?.members ?? [];
    for (const b of this.brokers.byId.values()) {
      const m = members.find((x) => x.id === b.id);
      b.decommissioning = m?.state === "Decommissioning" || m?.state === "Removed";
      if (!this.brokers.available(b)) continue;
      if (now >= b.dispatchHeldUntilMs) b.walPending -= Math.min(b.walPending, this.rng.range(5, 60));
      const pod = this.kube.pods.get(NS, b.id);
      if (!b.draining && !b.decommissioning && this.podReady(pod)) b.walPending += this.rng.range(0, 25);
    }
  }

  #movesWork(now: number): void {
    for (const m of this.brokers.moves.values()) {
      const src = this.brokers.broker(m.from);
      const dst = this.brokers.broker(m.to);
      if (m.state === "copying") {
        if (!this.brokers.available(src) || !this.brokers.available(dst)) continue;
        if (Number.isNaN(m.readyAtMs)) m.readyAtMs = now + this.rng.range(2, 10) * 1000;
        if (now < m.readyAtMs) continue;
        m.state = "ready";
        this.copies.get(`${m.topic}/${m.partition}`)?.add(m.to);
        this.log(`move ${m.topic}/${m.partition} ${m.from}→${m.to} ready`);
      } else if (
        m.state === "ready" &&
        this.owner(m.topic, m.partition) === m.to &&
        this.brokers.available(dst)
      ) {
        m.state = "done";
        this.log(`move ${m.topic}/${m.partition} ${m.from}→${m.to} done`);
      }
    }
  }

  #kubelet(now: number): void {
    for (const pod of this.kube.pods.list(NS)) {
      const name = pod.metadata!.name!;
      const b = this.brokers.broker(name);
      const serving =
        this.brokers.available(b) && !b.draining && !b.decommissioning && now - b.startedAtMs >= 2000;
      const fault = this.nodeNotReady.get(name);
      const ready = serving && fault === undefined;
      if (ready === this.podReady(pod)) continue;
      const next = structuredClone(pod);
      next.status = {
        ...next.status,
        conditions: [
          {
            type: "Ready",
            status: ready ? "True" : "False",
            lastTransitionTime: new Date(now),
            ...(fault?.reason !== undefined ? { reason: fault.reason } : {}),
          },
          ...(fault !== undefined ? [{ type: "ContainersReady", status: serving ? "True" : "False" }] : []),
        ],
      };
      this.kube.pods.put(next);
    }
  }

  // ------------------------------------------------------------ faults and user actions

  crash(b: SimBroker, downMs: number): void {
    if (b.process !== "up") return;
    b.process = "down";
    this.restartAtMs.set(b.id, this.now() + downMs);
    this.log(`${b.id} broker killed (kill -9), restarts in ${downMs} ms`);
  }

  freeze(b: SimBroker, forMs: number): void {
    if (b.process !== "up" || b.frozen) return;
    b.frozen = true;
    this.unfreezeAtMs.set(b.id, this.now() + forMs);
    this.log(`${b.id} broker frozen (SIGSTOP) for ${forMs} ms`);
  }

  forceDelete(ordinal: number): void {
    const pod = this.pod(ordinal);
    if (pod === undefined) return;
    this.#podGone(pod, "force-deleted (node lost)");
    this.recreateAtMs.set(ordinal, this.now() + this.rng.range(2, 30) * 1000);
  }

  failNode(podName: string, forMs: number): void {
    const reason = this.rng.bool() ? "NodeNotReady" : undefined;
    this.nodeNotReady.set(podName, { untilMs: this.now() + forMs, reason });
    this.log(`${podName}'s node NotReady for ${forMs} ms (reason ${reason ?? "none"}); the broker is fine`);
  }

  userSetImage(image: string): void {
    this.kube.updateSpec(this.kube.clusters, NS, CLUSTER, (spec) => {
      spec.image = image;
    });
    this.log(`user sets image ${image}`);
  }

  userSetReplicas(n: number): void {
    this.kube.updateSpec(this.kube.clusters, NS, CLUSTER, (spec) => {
      spec.replicas = n;
    });
    this.log(`user sets replicas ${n}`);
  }
}

function describeWrite(name: string, args: unknown[]): string {
  if (name === "evictPod" || name === "delete") {
    const a0 = args[0] as { kind?: string; name?: string } | string;
    return typeof a0 === "string" ? `${a0}/${String(args[1])}` : `${a0.kind} ${a0.name}`;
  }
  if (name === "apply" || name === "createIfAbsent") {
    const o = args[0] as KubernetesObject;
    return `${o.kind} ${o.metadata?.name}`;
  }
  const ref = args[0] as { plural?: string; name?: string };
  return `${ref.plural} ${ref.name}`;
}
