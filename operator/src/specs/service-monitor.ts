import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_HTTP_PORT_NAME, LABEL_SERVICE_ROLE } from "../constants.ts";
import type { KubernetesObject } from "../kube/models.ts";
import { commonLabels, resourceNames, selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

export const SERVICE_MONITOR_API_VERSION = "monitoring.coreos.com/v1";
export const SERVICE_MONITOR_KIND = "ServiceMonitor";

export interface ServiceMonitor extends KubernetesObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    endpoints: Endpoint[];
  };
}

interface Endpoint {
  port: string;
  path: string;
  interval?: string;
  scheme?: "https";
  tlsConfig?: { ca: { secret: { name: string; key: string } }; serverName: string };
}

/**
 * How Prometheus scrapes a broker: /metrics on the HTTP port, over HTTPS
 * when TLS is on, trusting the TLS Secret's CA (its ca.crt) and checking the
 * client Service's name, which the certificate must therefore cover.
 */
function scrapeEndpoint(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
  interval: string | undefined,
): Endpoint {
  const endpoint: Endpoint = { port: BROKER_HTTP_PORT_NAME, path: "/metrics" };
  if (interval !== undefined) endpoint.interval = interval;
  const tls = spec.security.tls;
  if (tls !== undefined) {
    endpoint.scheme = "https";
    endpoint.tlsConfig = {
      ca: { secret: { name: tls.secretName, key: "ca.crt" } },
      serverName: `${resourceNames(cluster.metadata.name ?? "").clientService}.${cluster.metadata.namespace ?? "default"}.svc`,
    };
  }
  return endpoint;
}

/** A prometheus-operator ServiceMonitor over the client Service, or undefined when disabled. */
export function serviceMonitorSpec(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): ServiceMonitor | undefined {
  const sm = spec.metrics.serviceMonitor;
  if (!sm.enabled) return undefined;
  const name = cluster.metadata.name ?? "";
  const endpoint = scrapeEndpoint(cluster, spec, sm.interval);
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

export const POD_MONITOR_KIND = "PodMonitor";

export interface PodMonitor extends KubernetesObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    podMetricsEndpoints: Endpoint[];
  };
}

/** A prometheus-operator PodMonitor over the broker pods, or undefined when disabled. */
export function podMonitorSpec(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): PodMonitor | undefined {
  const pm = spec.metrics.podMonitor;
  if (!pm.enabled) return undefined;
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: SERVICE_MONITOR_API_VERSION,
    kind: POD_MONITOR_KIND,
    metadata: ownedMeta(cluster, resourceNames(name).podMonitor, pm.labels),
    spec: {
      selector: { matchLabels: selectorLabels(name) },
      podMetricsEndpoints: [scrapeEndpoint(cluster, spec, pm.interval)],
    },
  };
}
