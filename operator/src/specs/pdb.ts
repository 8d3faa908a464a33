import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { PDB_MAX_UNAVAILABLE } from "../constants.ts";
import type { V1PodDisruptionBudget } from "../kube/models.ts";
import { resourceNames, selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

/** At most one broker voluntarily disrupted (drains, evictions) at a time. */
export function podDisruptionBudgetSpec(cluster: NaradCluster): V1PodDisruptionBudget {
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: ownedMeta(cluster, resourceNames(name).podDisruptionBudget),
    spec: {
      maxUnavailable: PDB_MAX_UNAVAILABLE,
      selector: { matchLabels: selectorLabels(name) },
    },
  };
}
