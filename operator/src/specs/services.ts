import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  BROKER_CLUSTER_PORT,
  BROKER_CLUSTER_PORT_NAME,
  BROKER_HTTP_PORT,
  BROKER_HTTP_PORT_NAME,
  LABEL_SERVICE_ROLE,
} from "../constants.ts";
import type { V1Service } from "../kube/models.ts";
import { resourceNames, selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

/**
 * Headless Service: stable per-pod DNS for the StatefulSet. It publishes
 * not-ready addresses so brokers can find peers while they start (a broker
 * is not ready until it has joined).
 */
export function headlessServiceSpec(cluster: NaradCluster): V1Service {
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: ownedMeta(cluster, resourceNames(name).headlessService, { [LABEL_SERVICE_ROLE]: "headless" }),
    spec: {
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: selectorLabels(name),
      ports: [
        {
          name: BROKER_HTTP_PORT_NAME,
          port: BROKER_HTTP_PORT,
          targetPort: BROKER_HTTP_PORT,
          protocol: "TCP",
        },
        {
          name: BROKER_CLUSTER_PORT_NAME,
          port: BROKER_CLUSTER_PORT,
          targetPort: BROKER_CLUSTER_PORT,
          protocol: "TCP",
        },
      ],
    },
  };
}

/** Client Service: the HTTP API on ready brokers only. */
export function clientServiceSpec(cluster: NaradCluster): V1Service {
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: ownedMeta(cluster, resourceNames(name).clientService, { [LABEL_SERVICE_ROLE]: "client" }),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(name),
      ports: [
        {
          name: BROKER_HTTP_PORT_NAME,
          port: BROKER_HTTP_PORT,
          targetPort: BROKER_HTTP_PORT,
          protocol: "TCP",
        },
      ],
    },
  };
}
