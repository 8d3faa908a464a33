import type { CoreV1Event, KubernetesObject, V1Pod, V1Secret, V1StatefulSet } from "@kubernetes/client-node";
import type { NaradCluster, NaradTopic, NaradUser } from "../../../packages/api/src/v1alpha1/types.ts";
import { CLUSTER_PLURAL, TOPIC_PLURAL, USER_PLURAL } from "../constants.ts";
import type { CustomRef, EvictionResult, KubeApi, ObjectRef } from "../kube/api.ts";
import type { KindCache, KindSpec } from "../kube/informers.ts";
import type { CacheHealth } from "../plan/observation.ts";
import type { Caches, OwnedKind } from "./deps.ts";

// An in-memory stand-in for the API server plus informer caches, for
// controller unit tests: writes land in the caches at once, with
// resourceVersion conflicts on guarded patches like the real thing.

export class MemoryKind<T extends KubernetesObject> implements KindCache<T> {
  readonly spec: KindSpec;
  readonly objects = new Map<string, T>();
  synced = true;
  /** Tests set this to play a watch outage (healthy: false) and its recovery. */
  health: CacheHealth[];
  constructor(kind: string) {
    this.spec = { name: kind, apiVersion: "", kind, plural: "" };
    this.health = [{ name: kind, healthy: true, recoveredAtMs: undefined }];
  }
  get(namespace: string, name: string): T | undefined {
    return this.objects.get(`${namespace}/${name}`);
  }
  list(namespace?: string): T[] {
    return [...this.objects.values()].filter(
      (o) => namespace === undefined || o.metadata?.namespace === namespace,
    );
  }
  put(obj: T): void {
    this.objects.set(`${obj.metadata?.namespace}/${obj.metadata?.name}`, obj);
  }
  remove(namespace: string, name: string): boolean {
    return this.objects.delete(`${namespace}/${name}`);
  }
}

const OWNED: OwnedKind[] = [
  "ServiceAccount",
  "Role",
  "RoleBinding",
  "ConfigMap",
  "Service",
  "PodDisruptionBudget",
];

export class ApiError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

export class FakeKube implements KubeApi {
  readonly clusters = new MemoryKind<NaradCluster>("NaradCluster");
  readonly topics = new MemoryKind<NaradTopic>("NaradTopic");
  readonly users = new MemoryKind<NaradUser>("NaradUser");
  readonly statefulSets = new MemoryKind<V1StatefulSet>("StatefulSet");
  readonly pods = new MemoryKind<V1Pod>("Pod");
  readonly owned = new Map<OwnedKind, MemoryKind<KubernetesObject>>(OWNED.map((k) => [k, new MemoryKind(k)]));
  readonly other = new Map<string, KubernetesObject>();
  readonly writes: string[] = [];
  readonly events: CoreV1Event[] = [];
  /** Return an error to make apply of that object fail. */
  failApply: (obj: KubernetesObject) => Error | undefined = () => undefined;
  #rv = 100;
  #uid = 0;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  get caches(): Caches {
    return {
      clusters: this.clusters,
      topics: this.topics,
      users: this.users,
      statefulSets: this.statefulSets,
      pods: this.pods,
      owned: this.owned,
    };
  }

  nextRv(): string {
    return String(++this.#rv);
  }

  /** Create an object as a user would (uid, generation 1, resourceVersion). */
  create<T extends KubernetesObject>(store: MemoryKind<T>, obj: T): T {
    const stored = {
      ...structuredClone(obj),
      metadata: {
        ...obj.metadata,
        uid: obj.metadata?.uid ?? `uid-${++this.#uid}`,
        generation: 1,
        resourceVersion: this.nextRv(),
        creationTimestamp: new Date(this.#now()),
      },
    } as T;
    store.put(stored);
    return stored;
  }

  /** Change a spec as a user would (generation++). */
  updateSpec<T extends KubernetesObject & { spec: unknown }>(
    store: MemoryKind<T>,
    ns: string,
    name: string,
    f: (spec: T["spec"]) => void,
  ): void {
    const obj = structuredClone(store.get(ns, name));
    if (obj === undefined) throw new Error(`no ${ns}/${name}`);
    f(obj.spec);
    obj.metadata = {
      ...obj.metadata,
      generation: (obj.metadata?.generation ?? 0) + 1,
      resourceVersion: this.nextRv(),
    };
    store.put(obj);
  }

  #store(kind: string | undefined): MemoryKind<KubernetesObject> | undefined {
    if (kind === "StatefulSet") return this.statefulSets as unknown as MemoryKind<KubernetesObject>;
    if (kind === "Pod") return this.pods as unknown as MemoryKind<KubernetesObject>;
    return this.owned.get(kind as OwnedKind);
  }

  #custom(plural: string): MemoryKind<KubernetesObject> {
    if (plural === CLUSTER_PLURAL) return this.clusters as unknown as MemoryKind<KubernetesObject>;
    if (plural === TOPIC_PLURAL) return this.topics as unknown as MemoryKind<KubernetesObject>;
    if (plural === USER_PLURAL) return this.users as unknown as MemoryKind<KubernetesObject>;
    throw new Error(`unknown plural ${plural}`);
  }

  async apply<T extends KubernetesObject>(obj: T): Promise<T> {
    const err = this.failApply(obj);
    if (err) throw err;
    const ns = obj.metadata?.namespace ?? "";
    const name = obj.metadata?.name ?? "";
    this.writes.push(`apply ${obj.kind} ${name}`);
    const store = this.#store(obj.kind);
    if (store === undefined) {
      this.other.set(`${obj.kind}/${ns}/${name}`, structuredClone(obj));
      return obj;
    }
    const existing = store.get(ns, name);
    const stored = {
      ...structuredClone(obj),
      metadata: {
        ...structuredClone(obj.metadata),
        uid: existing?.metadata?.uid ?? `uid-${++this.#uid}`,
        resourceVersion: this.nextRv(),
      },
    } as KubernetesObject & { status?: unknown };
    const prevStatus = (existing as { status?: unknown } | undefined)?.status;
    if (prevStatus !== undefined) stored.status = prevStatus;
    store.put(stored);
    return stored as T;
  }

  async delete(ref: ObjectRef, pre?: { uid?: string }): Promise<boolean> {
    this.writes.push(`delete ${ref.kind} ${ref.name}`);
    const store = this.#store(ref.kind);
    if (store === undefined) return this.other.delete(`${ref.kind}/${ref.namespace}/${ref.name}`);
    if (pre?.uid !== undefined && store.get(ref.namespace, ref.name)?.metadata?.uid !== pre.uid) return false;
    return store.remove(ref.namespace, ref.name);
  }

  /**
   * Stands in for the API server's PodDisruptionBudget check: return a
   * message to refuse an eviction with 429 (undefined: allowed).
   */
  evictionBudget: (namespace: string, name: string) => string | undefined = () => undefined;

  async evictPod(namespace: string, name: string, uid?: string): Promise<EvictionResult> {
    const pod = this.pods.get(namespace, name);
    if (pod === undefined || (uid !== undefined && pod.metadata?.uid !== uid)) return { kind: "gone" };
    const refused = this.evictionBudget(namespace, name);
    if (refused !== undefined) {
      this.writes.push(`evict refused Pod ${name}`);
      return { kind: "budget", message: refused };
    }
    this.writes.push(`evict Pod ${name}`);
    this.pods.remove(namespace, name);
    return { kind: "evicted" };
  }

  async patchStatus<T extends KubernetesObject>(
    ref: CustomRef,
    status: object,
    resourceVersion: string,
  ): Promise<T> {
    const store = this.#custom(ref.plural);
    const obj = store.get(ref.namespace, ref.name) as (KubernetesObject & { status?: object }) | undefined;
    if (obj === undefined) throw new ApiError(404, "not found");
    if (obj.metadata?.resourceVersion !== resourceVersion) throw new ApiError(409, "conflict");
    this.writes.push(`status ${ref.plural} ${ref.name}`);
    const next = {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: this.nextRv() },
      // RFC 7386, as the API server does: nested objects merge, null deletes.
      status: mergePatch(obj.status ?? {}, structuredClone(status) as Record<string, unknown>),
    };
    store.put(next);
    return next as unknown as T;
  }

  async patchObject<T extends KubernetesObject>(
    ref: CustomRef,
    patch: { metadata?: { annotations?: Record<string, string> }; spec?: object },
    resourceVersion: string,
  ): Promise<T> {
    const store = this.#custom(ref.plural);
    const obj = store.get(ref.namespace, ref.name) as (KubernetesObject & { spec?: object }) | undefined;
    if (obj === undefined) throw new ApiError(404, "not found");
    if (obj.metadata?.resourceVersion !== resourceVersion) throw new ApiError(409, "conflict");
    this.writes.push(`patch ${ref.plural} ${ref.name}`);
    const annotations = { ...obj.metadata?.annotations, ...patch.metadata?.annotations };
    const next = {
      ...obj,
      metadata: { ...obj.metadata, annotations, resourceVersion: this.nextRv() },
      ...(patch.spec === undefined ? {} : { spec: { ...obj.spec, ...patch.spec } }),
    };
    store.put(next);
    return next as unknown as T;
  }

  async setFinalizers<T extends KubernetesObject>(
    ref: CustomRef,
    finalizers: string[],
    resourceVersion: string,
  ): Promise<T> {
    const store = this.#custom(ref.plural);
    const obj = store.get(ref.namespace, ref.name);
    if (obj === undefined) throw new ApiError(404, "not found");
    if (obj.metadata?.resourceVersion !== resourceVersion) throw new ApiError(409, "conflict");
    this.writes.push(`finalizers ${ref.plural} ${ref.name} [${finalizers.join(",")}]`);
    const next = { ...obj, metadata: { ...obj.metadata, finalizers, resourceVersion: this.nextRv() } };
    if (next.metadata.deletionTimestamp && finalizers.length === 0) store.remove(ref.namespace, ref.name);
    else store.put(next);
    return next as T;
  }

  async createIfAbsent<T extends KubernetesObject>(obj: T): Promise<boolean> {
    const key = `${obj.kind}/${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
    if (this.other.has(key)) return false;
    this.writes.push(`create ${obj.kind} ${obj.metadata?.name}`);
    this.other.set(key, structuredClone(obj));
    return true;
  }

  /** Tests replace this to play an API server ahead of the cache (a stale informer). */
  liveTopic: (namespace: string, name: string) => NaradTopic | undefined = (ns, name) =>
    this.topics.get(ns, name);
  readonly topicReads: string[] = [];

  async getTopic(namespace: string, name: string): Promise<NaradTopic | undefined> {
    this.topicReads.push(name);
    const t = this.liveTopic(namespace, name);
    return t === undefined ? undefined : structuredClone(t);
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    const s = this.other.get(`Secret/${namespace}/${name}`) as V1Secret | undefined;
    if (s === undefined) return undefined;
    // Like the API server: stringData is folded into base64 data on write.
    const data: Record<string, string> = { ...s.data };
    for (const [k, v] of Object.entries(s.stringData ?? {})) data[k] = Buffer.from(v).toString("base64");
    return { ...structuredClone(s), stringData: undefined, data };
  }

  async patchSecretData(
    namespace: string,
    name: string,
    data: Record<string, string>,
    resourceVersion: string,
  ): Promise<V1Secret> {
    const key = `Secret/${namespace}/${name}`;
    const s = this.other.get(key) as V1Secret | undefined;
    if (s === undefined) throw new ApiError(404, `secret ${name} not found`);
    if ((s.metadata?.resourceVersion ?? "") !== resourceVersion) throw new ApiError(409, "conflict");
    this.writes.push(`patch Secret ${name}`);
    const next: V1Secret = {
      ...structuredClone(s),
      metadata: { ...s.metadata, resourceVersion: String(++this.#rv) },
      data: { ...s.data, ...data },
    };
    this.other.set(key, next);
    return structuredClone(next);
  }

  async createEvent(_ns: string, event: CoreV1Event): Promise<CoreV1Event> {
    this.events.push(event);
    return event;
  }

  async patchEventCount(): Promise<void> {}

  /** A ready (or not) broker pod of cluster `cluster`, as the StatefulSet controller and kubelet would make it. */
  addPod(ns: string, cluster: string, ordinal: number, ready: boolean, revision = "rev-1"): void {
    const name = `${cluster}-${ordinal}`;
    this.pods.put({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: ns,
        uid: `pod-${name}-${++this.#uid}`,
        labels: { "narad.dev/cluster": cluster, "controller-revision-hash": revision },
        creationTimestamp: new Date(this.#now() - 60_000),
      },
      // One node per ordinal (node-<n>): tests give nodes zones through deps.zones.
      spec: { nodeName: `node-${ordinal}`, containers: [] },
      status: {
        podIP: `127.1.0.${ordinal + 1}`,
        conditions: [
          {
            type: "Ready",
            status: ready ? "True" : "False",
            lastTransitionTime: new Date(this.#now() - 60_000),
          },
        ],
      },
    });
  }

  /** The kubelet's readiness verdict changes; the pod (uid) stays the same. */
  setPodReady(ns: string, name: string, ready: boolean): void {
    const pod = this.pods.get(ns, name);
    if (pod === undefined) throw new Error(`no pod ${ns}/${name}`);
    const next = structuredClone(pod);
    next.status = {
      ...next.status,
      conditions: [
        { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: new Date(this.#now()) },
      ],
    };
    this.pods.put(next);
  }

  setStatefulSetStatus(ns: string, name: string, updateRevision: string): void {
    const sts = this.statefulSets.get(ns, name);
    if (sts)
      this.statefulSets.put({
        ...sts,
        status: { replicas: sts.spec?.replicas ?? 0, updateRevision, currentRevision: updateRevision },
      });
  }
}

/** JSON merge patch: a null value removes the key. */
/** JSON merge patch (RFC 7386): objects merge key by key, null deletes, anything else replaces. */
function mergePatch(target: object, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(target as Record<string, unknown>) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === "object" && !Array.isArray(v)) {
      const t = out[k];
      out[k] = mergePatch(
        typeof t === "object" && t !== null && !Array.isArray(t) ? t : {},
        v as Record<string, unknown>,
      );
    } else out[k] = v;
  }
  return out;
}
