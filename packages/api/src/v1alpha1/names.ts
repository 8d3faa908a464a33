// Names of the objects the operator creates for a NaradCluster. Part of the
// API: the brokers name their producer registry ConfigMap and API users
// Secret with them, and the
// e2e suites find Services and Secrets by them.

/** Owned-object names, one place so the controller and tests agree. */
export function resourceNames(clusterName: string) {
  return {
    serviceAccount: `${clusterName}-broker`,
    role: `${clusterName}-broker`,
    roleBinding: `${clusterName}-broker`,
    configMap: `${clusterName}-config`,
    /** Written by the brokers (the producer-id registry), never by the operator. */
    producerRegistry: `${clusterName}-producers`,
    /**
     * The Users API's users (kubernetes metastore): created empty by the
     * operator when auth is on, then written only by the brokers.
     */
    apiUsers: `${clusterName}-api-users`,
    headlessService: `${clusterName}-headless`,
    clientService: clusterName,
    statefulSet: clusterName,
    podDisruptionBudget: clusterName,
    serviceMonitor: clusterName,
    podMonitor: clusterName,
  };
}
