import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { PDB_MAX_UNAVAILABLE } from "../constants.ts";
import type { V1PodDisruptionBudget } from "../kube/models.ts";
import { resourceNames, selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

/**
 * At most one broker voluntarily disrupted (drains, evictions) at a time.
 *
 * With one broker in service, maxUnavailable 1 makes the budget's
 * desiredHealthy 0, and the API server's exemption for evicting a pod that
 * is not Ready only applies when desiredHealthy is above 0. A drained broker
 * fails its readiness probe by design, so its Eviction found currentHealthy 0,
 * disruptionsAllowed 0 and was refused for good: a 1-broker cluster was never
 * rolled, and a node drain could not move a single broker that was not Ready.
 * There is no other broker for the budget to protect, so a single-broker
 * budget lets an unready pod go (AlwaysAllow); a Ready one was always
 * allowed. With two or more brokers the default (IfHealthyBudget) stays: a
 * draining broker is not Ready, and it must not be evicted while another
 * broker is down.
 */
export function podDisruptionBudgetSpec(
  cluster: NaradCluster,
  brokersInService: number,
): V1PodDisruptionBudget {
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: ownedMeta(cluster, resourceNames(name).podDisruptionBudget),
    spec: {
      maxUnavailable: PDB_MAX_UNAVAILABLE,
      selector: { matchLabels: selectorLabels(name) },
      ...(brokersInService <= 1 ? { unhealthyPodEvictionPolicy: "AlwaysAllow" } : {}),
    },
  };
}
