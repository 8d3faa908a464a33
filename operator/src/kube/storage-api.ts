import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  StorageV1Api,
  setHeaderOptions,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from "@kubernetes/client-node";
import { FIELD_MANAGER } from "../constants.ts";
import { AbortedError, httpStatus } from "./api.ts";

// The few calls volume expansion needs (the storage step), kept apart from
// KubeApi: PVCs are created by the StatefulSet controller, not applied by
// us, so the operator only reads them and raises their request.

export interface StorageApi {
  /** PVCs of a namespace matching a label selector ("k=v,k2=v2"). */
  listClaims(namespace: string, labelSelector: string): Promise<V1PersistentVolumeClaim[]>;
  /** A StorageClass, or undefined when it does not exist. */
  getStorageClass(name: string): Promise<V1StorageClass | undefined>;
  /** Raise a claim's spec.resources.requests.storage (merge patch): the resizer does the rest. */
  resizeClaim(namespace: string, name: string, size: string): Promise<void>;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

export class ClientNodeStorageApi implements StorageApi {
  readonly #core: CoreV1Api;
  readonly #storage: StorageV1Api;

  constructor(kc: KubeConfig) {
    this.#core = kc.makeApiClient(CoreV1Api);
    this.#storage = kc.makeApiClient(StorageV1Api);
  }

  async listClaims(namespace: string, labelSelector: string): Promise<V1PersistentVolumeClaim[]> {
    return (await this.#core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector })).items;
  }

  async getStorageClass(name: string): Promise<V1StorageClass | undefined> {
    try {
      return await this.#storage.readStorageClass({ name });
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async resizeClaim(namespace: string, name: string, size: string): Promise<void> {
    await this.#core.patchNamespacedPersistentVolumeClaim(
      {
        namespace,
        name,
        body: { spec: { resources: { requests: { storage: size } } } },
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    );
  }
}

/** Like guardedApi: a deposed leader resizes nothing. Reads pass through. */
export function guardedStorageApi(api: StorageApi, signal: AbortSignal): StorageApi {
  return {
    listClaims: (ns, sel) => api.listClaims(ns, sel),
    getStorageClass: (name) => api.getStorageClass(name),
    resizeClaim: (ns, name, size) => {
      if (signal.aborted) throw new AbortedError(`resize PersistentVolumeClaim/${name}`);
      return api.resizeClaim(ns, name, size);
    },
  };
}

/** In-memory StorageApi for controller tests: claims and classes as a test sets them. */
export class MemoryStorageApi implements StorageApi {
  readonly claims = new Map<string, V1PersistentVolumeClaim>();
  readonly classes = new Map<string, V1StorageClass>();
  readonly resizes: string[] = [];

  putClaim(claim: V1PersistentVolumeClaim): void {
    this.claims.set(`${claim.metadata?.namespace}/${claim.metadata?.name}`, structuredClone(claim));
  }

  async listClaims(namespace: string, labelSelector: string): Promise<V1PersistentVolumeClaim[]> {
    const want = labelSelector
      .split(",")
      .filter((s) => s !== "")
      .map((s) => s.split("=") as [string, string]);
    return [...this.claims.values()]
      .filter((c) => c.metadata?.namespace === namespace)
      .filter((c) => want.every(([k, v]) => c.metadata?.labels?.[k] === v))
      .map((c) => structuredClone(c));
  }

  async getStorageClass(name: string): Promise<V1StorageClass | undefined> {
    const c = this.classes.get(name);
    return c === undefined ? undefined : structuredClone(c);
  }

  async resizeClaim(namespace: string, name: string, size: string): Promise<void> {
    const c = this.claims.get(`${namespace}/${name}`);
    if (c?.spec === undefined) throw Object.assign(new Error("not found"), { code: 404 });
    c.spec.resources = { ...c.spec.resources, requests: { ...c.spec.resources?.requests, storage: size } };
    this.resizes.push(`${name}=${size}`);
  }
}
