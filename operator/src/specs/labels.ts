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

// The names of the objects the operator creates for a cluster are part of the
// API (the brokers find their producer registry by name): packages/api owns them.
export { resourceNames } from "../../../packages/api/src/v1alpha1/names.ts";
