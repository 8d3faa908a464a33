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

/** A prometheus-operator ServiceMonitor over the client Service, or undefined when disabled. */
export function serviceMonitorSpec(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): ServiceMonitor | undefined {
  const sm = spec.metrics.serviceMonitor;
  if (!sm.enabled) return undefined;
  const name = cluster.metadata.name ?? "";
  const endpoint: Endpoint = { port: BROKER_HTTP_PORT_NAME, path: "/metrics" };
  if (sm.interval !== undefined) endpoint.interval = sm.interval;
  const tls = spec.security.tls;
  if (tls !== undefined) {
    // The brokers serve /metrics over HTTPS on the same port. Prometheus
    // trusts the CA of the TLS Secret (its ca.crt) and checks the name of
    // the client Service, which the certificate must therefore cover.
    endpoint.scheme = "https";
    endpoint.tlsConfig = {
      ca: { secret: { name: tls.secretName, key: "ca.crt" } },
      serverName: `${resourceNames(name).clientService}.${cluster.metadata.namespace ?? "default"}.svc`,
    };
  }
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
