import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_ROLE_RULES, brokerRegistryRules, brokerScaleRules } from "../install/install.ts";
import type { V1Role, V1RoleBinding, V1ServiceAccount } from "../kube/models.ts";
import { resourceNames } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

// Brokers use the Kubernetes API as their metastore (ARCHITECTURE.md §4):
// they watch topics and clusters, create/delete topics for POST/DELETE
// /v1/topics, and read status (assignments, membership) written by the
// operator. The one status write they make is the ISR of a replicated
// partition they lead (a resourceVersion-guarded patch of naradtopics/status,
// ADR 0007); NaradCluster status stays read-only. A decommission request patches their
// own cluster's scale subresource (brokerScaleRules). They also keep the
// producer-id registry in one ConfigMap of their own and the Users API's
// users in one Secret (brokerRegistryRules).

export function serviceAccountSpec(cluster: NaradCluster): V1ServiceAccount {
  const names = resourceNames(cluster.metadata.name ?? "");
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: ownedMeta(cluster, names.serviceAccount),
  };
}

export function roleSpec(cluster: NaradCluster): V1Role {
  const names = resourceNames(cluster.metadata.name ?? "");
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: ownedMeta(cluster, names.role),
    // One source of truth with the operator's own ClusterRole (install.ts),
    // which must hold every permission it grants (RBAC escalation check).
    rules: [
      ...BROKER_ROLE_RULES,
      ...brokerRegistryRules(names.producerRegistry, names.apiUsers),
      ...brokerScaleRules(cluster.metadata.name ?? ""),
    ].map((r) => ({
      ...r,
      apiGroups: [...r.apiGroups],
      resources: [...r.resources],
      verbs: [...r.verbs],
      ...(r.resourceNames === undefined ? {} : { resourceNames: [...r.resourceNames] }),
    })),
  };
}

export function roleBindingSpec(cluster: NaradCluster): V1RoleBinding {
  const names = resourceNames(cluster.metadata.name ?? "");
  const meta = ownedMeta(cluster, names.roleBinding);
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: meta,
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: names.role },
    subjects: [
      { kind: "ServiceAccount", name: brokerServiceAccountName(cluster), namespace: meta.namespace },
    ],
  };
}

/** The account broker pods run as: the user's override, else the one we create. */
export function brokerServiceAccountName(cluster: NaradCluster): string {
  return cluster.spec.pod?.serviceAccountName ?? resourceNames(cluster.metadata.name ?? "").serviceAccount;
}
