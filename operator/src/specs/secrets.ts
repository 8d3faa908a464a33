import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  BROKER_CLUSTER_SECRET_DIR,
  BROKER_CLUSTER_SECRET_KEY,
  BROKER_CLUSTER_SECRET_VOLUME,
  BROKER_TLS_DIR,
  BROKER_TLS_VOLUME,
  BROKER_USERS_DIR,
  BROKER_USERS_KEY,
  BROKER_USERS_VOLUME,
  USERS_ADMIN_NAME,
} from "../constants.ts";
import type { V1EnvVar, V1Secret, V1Volume, V1VolumeMount } from "../kube/models.ts";
import { ownedMeta } from "./owner.ts";

// The Secrets a cluster's brokers read (issue #9): the users file for HTTP
// auth and the shared secret for cluster RPC (also the operator's admin
// bearer token). The operator creates the default-named ones when missing,
// never overwrites them afterwards (users rotate them), and mounts them as
// files: only Secret names enter the pod template, never contents, so a
// rotation does not roll the pods (the broker re-reads the files).
//
// Pure: random material is an input (the step draws it from node:crypto).

/** The users Secret's name: spec.security.auth.usersSecret, else "<cluster>-users". */
export function usersSecretName(clusterName: string, spec: ResolvedNaradClusterSpec): string {
  return spec.security.auth.usersSecret ?? `${clusterName}-users`;
}

/** The cluster secret's name: spec.security.clusterSecret, else "<cluster>-cluster-secret". */
export function clusterSecretName(clusterName: string, spec: ResolvedNaradClusterSpec): string {
  return spec.security.clusterSecret ?? `${clusterName}-cluster-secret`;
}

/** The broker's users file (NARAD_AUTH_FILE) with one root user. */
export function usersFile(adminPassword: string): string {
  const file = {
    users: [
      {
        name: USERS_ADMIN_NAME,
        password: adminPassword,
        // "admin" is root on the broker; the grant says so for readers of the file too.
        grants: [{ action: "admin", topics: "*" }],
      },
    ],
  };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/**
 * The users Secret created for a cluster that names none: users.json for the
 * broker, username/password for humans (`kubectl get secret -o jsonpath`).
 */
export function usersSecretSpec(cluster: NaradCluster, name: string, adminPassword: string): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: ownedMeta(cluster, name),
    type: "Opaque",
    stringData: {
      [BROKER_USERS_KEY]: usersFile(adminPassword),
      username: USERS_ADMIN_NAME,
      password: adminPassword,
    },
  };
}

/**
 * The Users API's store on the kubernetes metastore (resourceNames().apiUsers):
 * created with no users, owned by the cluster; the brokers write it from
 * then on (broker/src/auth/kube-users-store.ts), the operator never again.
 */
export function apiUsersSecretSpec(cluster: NaradCluster, name: string): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: ownedMeta(cluster, name),
    type: "Opaque",
    stringData: { [BROKER_USERS_KEY]: `${JSON.stringify({ version: 1, users: [] })}\n` },
  };
}

/** The cluster RPC secret: key "secret", 32 random bytes as hex. */
export function clusterSecretSpec(cluster: NaradCluster, name: string, secretHex: string): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: ownedMeta(cluster, name),
    type: "Opaque",
    stringData: { [BROKER_CLUSTER_SECRET_KEY]: secretHex },
  };
}

/** Pod volumes for the Secrets (read-only files; 0440 so only the broker's group reads them). */
export function securityVolumes(clusterName: string, spec: ResolvedNaradClusterSpec): V1Volume[] {
  const mode = 0o440;
  const volumes: V1Volume[] = [
    {
      name: BROKER_CLUSTER_SECRET_VOLUME,
      secret: { secretName: clusterSecretName(clusterName, spec), defaultMode: mode },
    },
  ];
  if (spec.security.auth.enabled) {
    volumes.push({
      name: BROKER_USERS_VOLUME,
      secret: { secretName: usersSecretName(clusterName, spec), defaultMode: mode },
    });
  }
  const tls = spec.security.tls;
  if (tls !== undefined) {
    volumes.push({ name: BROKER_TLS_VOLUME, secret: { secretName: tls.secretName, defaultMode: mode } });
  }
  return volumes;
}

export function securityVolumeMounts(spec: ResolvedNaradClusterSpec): V1VolumeMount[] {
  const mounts: V1VolumeMount[] = [
    { name: BROKER_CLUSTER_SECRET_VOLUME, mountPath: BROKER_CLUSTER_SECRET_DIR, readOnly: true },
  ];
  if (spec.security.auth.enabled) {
    mounts.push({ name: BROKER_USERS_VOLUME, mountPath: BROKER_USERS_DIR, readOnly: true });
  }
  if (spec.security.tls !== undefined) {
    mounts.push({ name: BROKER_TLS_VOLUME, mountPath: BROKER_TLS_DIR, readOnly: true });
  }
  return mounts;
}

/**
 * The broker's security settings. NARAD_AUTH is always explicit, so the
 * spec decides whatever the broker's own default is.
 */
export function securityEnv(spec: ResolvedNaradClusterSpec): V1EnvVar[] {
  const env: V1EnvVar[] = [
    { name: "NARAD_AUTH", value: spec.security.auth.enabled ? "on" : "off" },
    { name: "NARAD_CLUSTER_SECRET_FILE", value: `${BROKER_CLUSTER_SECRET_DIR}/${BROKER_CLUSTER_SECRET_KEY}` },
  ];
  if (spec.security.auth.enabled) {
    env.push({ name: "NARAD_AUTH_FILE", value: `${BROKER_USERS_DIR}/${BROKER_USERS_KEY}` });
    // The broker puts /metrics behind auth when auth is on; the ServiceMonitor
    // scrapes without credentials, so keep it open here (docs/security.md:
    // restrict who reaches the port with the NetworkPolicy instead).
    env.push({ name: "NARAD_METRICS_AUTH", value: "off" });
  }
  if (spec.security.tls !== undefined) env.push({ name: "NARAD_TLS_DIR", value: BROKER_TLS_DIR });
  return env;
}

/** http or https for probes and the operator's admin calls. */
export function brokerScheme(spec: ResolvedNaradClusterSpec): "HTTP" | "HTTPS" {
  return spec.security.tls === undefined ? "HTTP" : "HTTPS";
}
