import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_CLUSTER_PORT, BROKER_HTTP_PORT } from "../constants.ts";
import type { V1NetworkPolicy, V1NetworkPolicyIngressRule } from "../kube/models.ts";
import { selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

export const NETWORK_POLICY_API_VERSION = "networking.k8s.io/v1";
export const NETWORK_POLICY_KIND = "NetworkPolicy";

/**
 * The optional NetworkPolicy for a cluster's broker pods (ingress only):
 *   - the API port (7942) from spec.security.networkPolicy.allowFrom (plus
 *     the cluster's own brokers), or from anywhere when the list is empty;
 *   - the cluster port (7943) only from the cluster's own brokers.
 * Egress is left alone: brokers must reach the API server, whose address
 * differs per distribution. undefined when disabled.
 */
export function networkPolicySpec(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): V1NetworkPolicy | undefined {
  const np = spec.security.networkPolicy;
  if (!np.enabled) return undefined;
  const name = cluster.metadata.name ?? "";
  const brokers = { podSelector: { matchLabels: selectorLabels(name) } };
  const tcp = (port: number) => [{ protocol: "TCP", port }];
  // "_from": client-node's model name for the JSON field "from" (its
  // serializer drops a plain "from"); the API server stores "from".
  const http: V1NetworkPolicyIngressRule =
    np.allowFrom.length === 0
      ? { ports: tcp(BROKER_HTTP_PORT) }
      : { ports: tcp(BROKER_HTTP_PORT), _from: [brokers, ...np.allowFrom.map((p) => structuredClone(p))] };
  const rpc: V1NetworkPolicyIngressRule = { ports: tcp(BROKER_CLUSTER_PORT), _from: [brokers] };
  return {
    apiVersion: NETWORK_POLICY_API_VERSION,
    kind: NETWORK_POLICY_KIND,
    metadata: ownedMeta(cluster, networkPolicyName(name)),
    spec: {
      podSelector: { matchLabels: selectorLabels(name) },
      policyTypes: ["Ingress"],
      ingress: [http, rpc],
    },
  };
}

export function networkPolicyName(clusterName: string): string {
  return `${clusterName}-brokers`;
}
