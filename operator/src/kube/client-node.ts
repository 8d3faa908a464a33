import {
  CoordinationV1Api,
  CoreV1Api,
  type CoreV1Event,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
  V1MicroTime,
  type V1Secret,
} from "@kubernetes/client-node";
import type { NaradTopic } from "../../../packages/api/src/v1alpha1/types.ts";
import { API_GROUP, API_VERSION, FIELD_MANAGER, TOPIC_PLURAL } from "../constants.ts";
import { type CustomRef, type EvictionResult, httpStatus, type KubeApi, type ObjectRef } from "./api.ts";
import type { LeaseRecord, LeaseStore } from "./leader-election.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** KubeApi over @kubernetes/client-node. */
export class ClientNodeApi implements KubeApi {
  readonly #objects: KubernetesObjectApi;
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.#objects = KubernetesObjectApi.makeApiClient(kc);
    this.#custom = kc.makeApiClient(CustomObjectsApi);
    this.#core = kc.makeApiClient(CoreV1Api);
  }

  async apply<T extends KubernetesObject>(obj: T): Promise<T> {
    // SSA: we send the whole desired object; fields we stop sending are
    // removed, fields other managers own (and server defaults) are left.
    return this.#objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  async delete(ref: ObjectRef, preconditions?: { uid?: string }): Promise<boolean> {
    try {
      await this.#objects.delete(
        {
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, namespace: ref.namespace },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        preconditions?.uid === undefined ? undefined : { preconditions: { uid: preconditions.uid } },
      );
      return true;
    } catch (err) {
      if (httpStatus(err) === 404 || isUnknownKind(err)) return false;
      // A uid precondition that no longer matches: the object was replaced.
      if (httpStatus(err) === 409 && preconditions?.uid !== undefined) return false;
      throw err;
    }
  }

  async evictPod(namespace: string, name: string, uid?: string): Promise<EvictionResult> {
    try {
      await this.#core.createNamespacedPodEviction({
        name,
        namespace,
        body: {
          apiVersion: "policy/v1",
          kind: "Eviction",
          metadata: { name, namespace },
          ...(uid === undefined ? {} : { deleteOptions: { preconditions: { uid } } }),
        },
      });
      return { kind: "evicted" };
    } catch (err) {
      const code = httpStatus(err);
      if (code === 404) return { kind: "gone" };
      // A uid precondition that no longer matches: the pod was replaced.
      if (code === 409 && uid !== undefined) return { kind: "gone" };
      if (code === 429) return { kind: "budget", message: evictionMessage(err) };
      throw err;
    }
  }

  async patchStatus<T extends KubernetesObject>(
    ref: CustomRef,
    status: object,
    resourceVersion: string,
  ): Promise<T> {
    return (await this.#custom.patchNamespacedCustomObjectStatus(
      {
        group: API_GROUP,
        version: API_VERSION,
        namespace: ref.namespace,
        plural: ref.plural,
        name: ref.name,
        body: { metadata: { resourceVersion }, status },
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    )) as T;
  }

  async patchObject<T extends KubernetesObject>(
    ref: CustomRef,
    patch: { metadata?: { annotations?: Record<string, string> }; spec?: object },
    resourceVersion: string,
  ): Promise<T> {
    return this.#mergePatchObject<T>(ref, { ...patch, metadata: { ...patch.metadata, resourceVersion } });
  }

  async setFinalizers<T extends KubernetesObject>(
    ref: CustomRef,
    finalizers: string[],
    resourceVersion: string,
  ): Promise<T> {
    return this.#mergePatchObject<T>(ref, { metadata: { resourceVersion, finalizers } });
  }

  /** A merge patch of one of Narad's custom objects (conditional when the body names a resourceVersion). */
  async #mergePatchObject<T extends KubernetesObject>(ref: CustomRef, body: object): Promise<T> {
    return (await this.#custom.patchNamespacedCustomObject(
      {
        group: API_GROUP,
        version: API_VERSION,
        namespace: ref.namespace,
        plural: ref.plural,
        name: ref.name,
        body,
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    )) as T;
  }

  async createIfAbsent<T extends KubernetesObject>(obj: T): Promise<boolean> {
    try {
      await this.#objects.create(obj, undefined, undefined, FIELD_MANAGER);
      return true;
    } catch (err) {
      if (httpStatus(err) === 409) return false;
      throw err;
    }
  }

  async getTopic(namespace: string, name: string): Promise<NaradTopic | undefined> {
    try {
      return (await this.#custom.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: TOPIC_PLURAL,
        name,
      })) as NaradTopic;
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.#core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async patchSecretData(
    namespace: string,
    name: string,
    data: Record<string, string>,
    resourceVersion: string,
  ): Promise<V1Secret> {
    return this.#core.patchNamespacedSecret(
      { namespace, name, body: { metadata: { resourceVersion }, data }, fieldManager: FIELD_MANAGER },
      mergePatch,
    );
  }

  async createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.#core.createNamespacedEvent({ namespace, body: event });
  }

  async patchEventCount(namespace: string, name: string, count: number, lastTimestamp: Date): Promise<void> {
    await this.#core.patchNamespacedEvent(
      { namespace, name, body: { count, lastTimestamp: lastTimestamp.toISOString() } },
      mergePatch,
    );
  }
}

/** A kind the server does not serve (e.g. ServiceMonitor without prometheus-operator). */
function isUnknownKind(err: unknown): boolean {
  return (
    err instanceof Error &&
    /Unrecognized API version and kind|Failed to fetch resource metadata/.test(err.message)
  );
}

/** The Lease for leader election, over coordination.k8s.io/v1. */
export class ClientNodeLeaseStore implements LeaseStore {
  readonly #api: CoordinationV1Api;
  readonly #namespace: string;
  readonly #name: string;

  constructor(kc: KubeConfig, namespace: string, name: string) {
    this.#api = kc.makeApiClient(CoordinationV1Api);
    this.#namespace = namespace;
    this.#name = name;
  }

  async get(): Promise<LeaseRecord | undefined> {
    try {
      return fromLease(await this.#api.readNamespacedLease({ name: this.#name, namespace: this.#namespace }));
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async create(record: LeaseRecord): Promise<LeaseRecord> {
    return fromLease(
      await this.#api.createNamespacedLease({ namespace: this.#namespace, body: this.#toLease(record) }),
    );
  }

  async update(record: LeaseRecord): Promise<LeaseRecord> {
    return fromLease(
      await this.#api.replaceNamespacedLease({
        name: this.#name,
        namespace: this.#namespace,
        body: this.#toLease(record),
      }),
    );
  }

  #toLease(r: LeaseRecord): V1Lease {
    const lease: V1Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: this.#name, namespace: this.#namespace },
      spec: {
        holderIdentity: r.holderIdentity,
        leaseDurationSeconds: r.leaseDurationSeconds,
        leaseTransitions: r.leaseTransitions,
      },
    };
    if (r.resourceVersion !== undefined && lease.metadata) lease.metadata.resourceVersion = r.resourceVersion;
    if (lease.spec) {
      // MicroTime: RFC 3339 with microseconds; V1MicroTime serialises so.
      if (r.acquireTime) lease.spec.acquireTime = new V1MicroTime(r.acquireTime.getTime());
      if (r.renewTime) lease.spec.renewTime = new V1MicroTime(r.renewTime.getTime());
    }
    return lease;
  }
}

function fromLease(l: V1Lease): LeaseRecord {
  const time = (v: Date | string | undefined) => (v === undefined ? undefined : new Date(v));
  return {
    holderIdentity: l.spec?.holderIdentity ?? "",
    leaseDurationSeconds: l.spec?.leaseDurationSeconds ?? 0,
    acquireTime: time(l.spec?.acquireTime),
    renewTime: time(l.spec?.renewTime),
    leaseTransitions: l.spec?.leaseTransitions ?? 0,
    resourceVersion: l.metadata?.resourceVersion,
  };
}

/** The API server's reason for refusing an eviction (the Status message), for conditions and Events. */
function evictionMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  const parsed = typeof body === "string" ? safeJson(body) : body;
  const msg = (parsed as { message?: unknown } | undefined)?.message;
  return typeof msg === "string" ? msg : "Cannot evict pod as it would violate the pod's disruption budget.";
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
