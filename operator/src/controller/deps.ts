import type { KubernetesObject, V1Pod, V1StatefulSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { NaradCluster, NaradTopic } from "../api/v1alpha1/types.ts";
import type { BrokerClient } from "../broker-client/types.ts";
import type { KubeApi } from "../kube/api.ts";
import type { Clock } from "../kube/clock.ts";
import type { Recorder } from "../kube/events.ts";
import type { KindCache } from "../kube/informers.ts";
import type { StorageApi } from "../kube/storage-api.ts";

/** Owned kinds other than the StatefulSet, cached by label. */
export type OwnedKind =
  | "ServiceAccount"
  | "Role"
  | "RoleBinding"
  | "ConfigMap"
  | "Service"
  | "PodDisruptionBudget";

export interface Caches {
  clusters: KindCache<NaradCluster>;
  topics: KindCache<NaradTopic>;
  statefulSets: KindCache<V1StatefulSet>;
  pods: KindCache<V1Pod>;
  owned: ReadonlyMap<OwnedKind, KindCache<KubernetesObject>>;
}

/** What the controller remembers between reconciles; losing it (restart) is safe. */
export class ControllerMemory {
  /** cluster uid → member id → earliest time seen without a ready pod. */
  readonly notReadySince = new Map<string, Map<string, number>>();
  /** cluster uid → last applied ServiceMonitor hash, or "absent" once deleted/never wanted. */
  readonly serviceMonitor = new Map<string, string>();

  forget(uid: string): void {
    this.notReadySince.delete(uid);
    this.serviceMonitor.delete(uid);
  }
}

export interface ReconcileDeps {
  caches: Caches;
  /** Writes; guarded by the leadership signal. */
  api: KubeApi;
  /** PVC reads and resizes (volume expansion); writes guarded like api. */
  storage: StorageApi;
  recorder: Recorder;
  brokers: BrokerClient;
  clock: Clock;
  log: Logger;
  memory: ControllerMemory;
  /** NARAD_OPERATOR_BROKER_IMAGE: image for clusters whose spec.image is unset. */
  defaultBrokerImage: string | undefined;
}

/** "namespace/name" work-queue keys. */
export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf("/");
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
