import type { CoreV1Event, KubernetesObject, V1Secret } from "@kubernetes/client-node";
import type { NaradTopic } from "../../../packages/api/src/v1alpha1/types.ts";

// The operator's few API operations behind one interface: the controller
// is tested against an in-memory fake; the real one (client-node.ts) is the
// only place that knows client-node's request shapes.

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/** A namespaced custom resource of the narad.dev group. */
export interface CustomRef {
  plural: string;
  namespace: string;
  name: string;
}

export type EvictionResult =
  | { kind: "evicted" }
  /** The pod is gone, or (uid given) replaced by another one. */
  | { kind: "gone" }
  /** 429: evicting now would violate a PodDisruptionBudget; retry later. */
  | { kind: "budget"; message: string };

export interface KubeApi {
  /** Server-side apply, fieldManager narad-operator, force (we own these objects). */
  apply<T extends KubernetesObject>(obj: T): Promise<T>;
  /**
   * false when the object (or its kind) does not exist, or (with
   * preconditions.uid) when it is another object by now (409).
   */
  delete(ref: ObjectRef, preconditions?: { uid?: string }): Promise<boolean>;
  /**
   * policy/v1 Eviction of a pod (pods/eviction), so the API server checks
   * its PodDisruptionBudget atomically against its own view, not our cache.
   * With uid, only that incarnation of the pod is evicted.
   */
  evictPod(namespace: string, name: string, uid?: string): Promise<EvictionResult>;
  /**
   * Merge patch on the /status subresource, guarded by resourceVersion (409
   * when the object changed since it was read: reconcile again from cache).
   */
  patchStatus<T extends KubernetesObject>(
    ref: CustomRef,
    status: object,
    resourceVersion: string,
  ): Promise<T>;
  /**
   * Merge patch of a custom resource's annotations and spec, guarded by
   * resourceVersion (the mirrors of Users API users: not a server-side
   * apply, which would prune what an earlier apply set and this one omits).
   */
  patchObject<T extends KubernetesObject>(
    ref: CustomRef,
    patch: { metadata?: { annotations?: Record<string, string> }; spec?: object },
    resourceVersion: string,
  ): Promise<T>;
  /** Merge patch of metadata.finalizers, guarded by resourceVersion. */
  setFinalizers<T extends KubernetesObject>(
    ref: CustomRef,
    finalizers: string[],
    resourceVersion: string,
  ): Promise<T>;
  /**
   * Plain create (POST), for objects the operator makes once and then leaves
   * to users (generated Secrets): false when the name is already taken (409).
   */
  createIfAbsent<T extends KubernetesObject>(obj: T): Promise<boolean>;
  /**
   * GET of one NaradTopic from the API server, not the cache (undefined on
   * 404): for decisions a stale cache must not make, such as aborting a
   * move whose owner swap the cache may not show yet.
   */
  getTopic(namespace: string, name: string): Promise<NaradTopic | undefined>;
  /** GET of one Secret (not cached: the operator may not list or watch Secrets); undefined on 404. */
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
  /**
   * Merge patch of a Secret's data (base64 values), guarded by
   * resourceVersion: 409 when the Secret changed since it was read (the
   * caller reads again and recomputes). The API users Secret only.
   */
  patchSecretData(
    namespace: string,
    name: string,
    data: Record<string, string>,
    resourceVersion: string,
  ): Promise<V1Secret>;
  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  patchEventCount(namespace: string, name: string, count: number, lastTimestamp: Date): Promise<void>;
}

/** HTTP status of a client-node error (ApiException.code, or a watch error's statusCode). */
export function httpStatus(err: unknown): number | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === "number") return e.code;
  if (typeof e.statusCode === "number") return e.statusCode;
  return undefined;
}

/** The API server's message from an error body, else the error's own. */
export function apiMessage(err: unknown): string {
  if (err !== null && typeof err === "object") {
    const body = (err as { body?: unknown }).body;
    const parsed = typeof body === "string" ? tryParse(body) : body;
    if (parsed !== null && typeof parsed === "object") {
      const msg = (parsed as { message?: unknown }).message;
      if (typeof msg === "string") return msg;
    }
    if (err instanceof Error) return err.message;
  }
  return String(err);
}

function tryParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

/** Thrown when a write is attempted after leadership was lost or shutdown began. */
export class AbortedError extends Error {
  constructor(what: string) {
    super(`not writing (${what}): reconcile aborted (leadership lost or shutting down)`);
    this.name = "AbortedError";
  }
}

/** Wraps a KubeApi so every write first checks the signal: a deposed leader writes nothing. */
export function guardedApi(api: KubeApi, signal: AbortSignal): KubeApi {
  const check = (what: string) => {
    if (signal.aborted) throw new AbortedError(what);
  };
  return {
    apply: (obj) => {
      check(`apply ${obj.kind}/${obj.metadata?.name}`);
      return api.apply(obj);
    },
    delete: (ref, pre) => {
      check(`delete ${ref.kind}/${ref.name}`);
      return api.delete(ref, pre);
    },
    evictPod: (ns, name, uid) => {
      check(`evict Pod/${name}`);
      return api.evictPod(ns, name, uid);
    },
    patchStatus: (ref, status, rv) => {
      check(`status ${ref.plural}/${ref.name}`);
      return api.patchStatus(ref, status, rv);
    },
    patchObject: (ref, patch, rv) => {
      check(`patch ${ref.plural}/${ref.name}`);
      return api.patchObject(ref, patch, rv);
    },
    setFinalizers: (ref, f, rv) => {
      check(`finalizers ${ref.plural}/${ref.name}`);
      return api.setFinalizers(ref, f, rv);
    },
    createIfAbsent: (obj) => {
      check(`create ${obj.kind}/${obj.metadata?.name}`);
      return api.createIfAbsent(obj);
    },
    patchSecretData: (ns, name, data, rv) => {
      check(`patch Secret/${name}`);
      return api.patchSecretData(ns, name, data, rv);
    },
    // A read: no leadership check.
    getSecret: (ns, name) => api.getSecret(ns, name),
    getTopic: (ns, name) => api.getTopic(ns, name),
    createEvent: (ns, ev) => {
      check("event");
      return api.createEvent(ns, ev);
    },
    patchEventCount: (ns, name, count, ts) => {
      check("event");
      return api.patchEventCount(ns, name, count, ts);
    },
  };
}
