import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { API_GROUP_VERSION, CLUSTER_KIND } from "../constants.ts";
import type { V1ObjectMeta, V1OwnerReference } from "../kube/models.ts";
import { commonLabels } from "./labels.ts";

/**
 * The controller ownerReference every owned object carries: the garbage
 * collector deletes them with the cluster, and blockOwnerDeletion keeps a
 * foreground deletion of the cluster waiting until they are gone.
 */
export function ownerReference(cluster: NaradCluster): V1OwnerReference {
  const { name, uid } = cluster.metadata;
  if (name === undefined || uid === undefined) {
    throw new Error("ownerReference: the NaradCluster has no name or uid (was it read from the API server?)");
  }
  return {
    apiVersion: API_GROUP_VERSION,
    kind: CLUSTER_KIND,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** metadata for an owned object in the cluster's namespace. */
export function ownedMeta(
  cluster: NaradCluster,
  name: string,
  extraLabels: Record<string, string> = {},
): V1ObjectMeta {
  const clusterName = cluster.metadata.name ?? "";
  return {
    name,
    namespace: cluster.metadata.namespace ?? "default",
    labels: { ...extraLabels, ...commonLabels(clusterName) },
    ownerReferences: [ownerReference(cluster)],
  };
}
