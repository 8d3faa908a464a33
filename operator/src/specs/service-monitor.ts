import type { NaradCluster, ResolvedNaradClusterSpec } from "../api/v1alpha1/types.ts";
import { BROKER_HTTP_PORT_NAME, LABEL_SERVICE_ROLE } from "../constants.ts";
import type { KubernetesObject } from "../kube/models.ts";
import { commonLabels, resourceNames } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

export const SERVICE_MONITOR_API_VERSION = "monitoring.coreos.com/v1";
export const SERVICE_MONITOR_KIND = "ServiceMonitor";

export interface ServiceMonitor extends KubernetesObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    endpoints: Array<{ port: string; path: string; interval?: string }>;
  };
}

/** A prometheus-operator ServiceMonitor over the client Service, or undefined when disabled. */
export function serviceMonitorSpec(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): ServiceMonitor | undefined {
  const sm = spec.metrics.serviceMonitor;
  if (!sm.enabled) return undefined;
  const name = cluster.metadata.name ?? "";
  const endpoint: { port: string; path: string; interval?: string } = {
    port: BROKER_HTTP_PORT_NAME,
    path: "/metrics",
  };
  if (sm.interval !== undefined) endpoint.interval = sm.interval;
  return {
    apiVersion: SERVICE_MONITOR_API_VERSION,
    kind: SERVICE_MONITOR_KIND,
    metadata: ownedMeta(cluster, resourceNames(name).serviceMonitor, sm.labels),
    spec: {
      // The headless Service carries the same common labels: select the
      // client one only, or every broker would be scraped twice.
      selector: { matchLabels: { ...commonLabels(name), [LABEL_SERVICE_ROLE]: "client" } },
      endpoints: [endpoint],
    },
  };
}
