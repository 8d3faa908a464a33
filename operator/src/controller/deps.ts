import type { KubernetesObject, V1Pod, V1StatefulSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { NaradCluster, NaradTopic, NaradUser } from "../../../packages/api/src/v1alpha1/types.ts";
import type { BrokerClient } from "../broker-client/types.ts";
import type { KubeApi } from "../kube/api.ts";
import type { Clock } from "../kube/clock.ts";
import type { Recorder } from "../kube/events.ts";
import type { KindCache } from "../kube/informers.ts";
import type { StorageApi } from "../kube/storage-api.ts";
import type { OperatorMetrics } from "../metrics.ts";

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
  users: KindCache<NaradUser>;
  statefulSets: KindCache<V1StatefulSet>;
  pods: KindCache<V1Pod>;
  owned: ReadonlyMap<OwnedKind, KindCache<KubernetesObject>>;
}

/** What the controller remembers between reconciles; losing it (restart) is safe. */
export class ControllerMemory {
  /** cluster uid → member id → first time (this term, operator clock) seen without a ready pod. */
  readonly notReadySince = new Map<string, Map<string, number>>();
  /** cluster uid → member id → first failed admin-status probe of the current run of failures. */
  readonly brokerUnreachableSince = new Map<string, Map<string, number>>();
  /** cluster uid → the planned restart's replacement pod first seen not Ready, and when (plan/replacement.ts). */
  readonly replacementSeen = new Map<string, { podUid: string; sinceMs: number }>();
  /** topic uid → first time (operator clock) this term saw it deleting. */
  readonly topicDeletingSince = new Map<string, number>();
  /** cluster uid → last applied ServiceMonitor hash, or "absent" once deleted/never wanted. */
  readonly serviceMonitor = new Map<string, string>();
  /** The same for the PodMonitor. */
  readonly podMonitor = new Map<string, string>();
  /** topic key → the labels of its replication gauges, to remove them when it goes. */
  readonly topicGauges = new Map<string, { namespace: string; cluster: string; topic: string }>();
  /**
   * topic key → "partition/member" → first time (this term, operator clock)
   * the partition's preferred replica could lead it without leading it: the
   * preferred-leader balance waits until that has lasted its settle time.
   */
  readonly preferredEligibleSince = new Map<string, Map<string, number>>();

  /**
   * A new leadership term begins. Observations from an earlier term are not
   * evidence: the pods may have come and gone in the gap, and timers that
   * survived it would declare a member Down on the first pass (a gap longer
   * than the grace looks like a grace already served). Every Down clock
   * restarts from this term's own observations.
   */
  startTerm(): void {
    this.notReadySince.clear();
    this.brokerUnreachableSince.clear();
    this.replacementSeen.clear();
    this.preferredEligibleSince.clear();
  }

  forget(uid: string): void {
    this.notReadySince.delete(uid);
    this.brokerUnreachableSince.delete(uid);
    this.replacementSeen.delete(uid);
    this.serviceMonitor.delete(uid);
    this.podMonitor.delete(uid);
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
  /**
   * How long after an informer recovers from watch errors its readiness
   * picture is not believed for Down decisions (NARAD_OPERATOR_OUTAGE_SETTLE_SECONDS;
   * default OBSERVATION_SETTLE_MS).
   */
  observationSettleMs?: number;
  /** NARAD_OPERATOR_BROKER_IMAGE: image for clusters whose spec.image is unset. */
  defaultBrokerImage: string | undefined;
  /** Where controller decisions are counted (move aborts); absent in tests that do not look. */
  metrics?: Pick<
    OperatorMetrics,
    "moveAborts" | "movesStuck" | "leaderElections" | "underReplicatedPartitions" | "offlinePartitions"
  >;
  /** Zone labels of nodes, for spreading replicas (absent: no zones). */
  zones?: NodeZones;
}

/** The `topology.kubernetes.io/zone` label of a node (cached; undefined when unlabelled or unreadable). */
export interface NodeZones {
  zoneOf(nodeName: string): Promise<string | undefined>;
}

/** "namespace/name" work-queue keys. */
export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf("/");
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
