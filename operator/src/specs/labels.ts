import {
  APP_NAME,
  COMPONENT_BROKER,
  LABEL_CLUSTER,
  LABEL_COMPONENT,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  MANAGED_BY,
} from "../constants.ts";

/**
 * Labels that select a cluster's broker pods. Stable for the life of the
 * cluster: a StatefulSet selector is immutable, so nothing here may depend
 * on the spec.
 */
export function selectorLabels(clusterName: string): Record<string, string> {
  return {
    [LABEL_NAME]: APP_NAME,
    [LABEL_INSTANCE]: clusterName,
    [LABEL_CLUSTER]: clusterName,
  };
}

/** Labels on every object the operator owns for a cluster. */
export function commonLabels(clusterName: string): Record<string, string> {
  return {
    ...selectorLabels(clusterName),
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_COMPONENT]: COMPONENT_BROKER,
  };
}

/** The selector as a label-selector string (for status.selector and list calls). */
export function selectorString(clusterName: string): string {
  return Object.entries(selectorLabels(clusterName))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

/** Owned-object names, one place so the controller and tests agree. */
export function resourceNames(clusterName: string) {
  return {
    serviceAccount: `${clusterName}-broker`,
    role: `${clusterName}-broker`,
    roleBinding: `${clusterName}-broker`,
    configMap: `${clusterName}-config`,
    /** Written by the brokers (the producer-id registry), never by the operator. */
    producerRegistry: `${clusterName}-producers`,
    headlessService: `${clusterName}-headless`,
    clientService: clusterName,
    statefulSet: clusterName,
    podDisruptionBudget: clusterName,
    serviceMonitor: clusterName,
    podMonitor: clusterName,
  };
}
