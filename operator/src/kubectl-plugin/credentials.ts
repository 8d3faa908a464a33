// `kubectl narad credentials`: how a client in the cluster reaches a
// NaradCluster. The client Service is named after the cluster
// (resourceNames().clientService) on the broker HTTP port; with auth on, the
// users Secret the operator creates ("<cluster>-users", operator/src/specs/secrets.ts)
// carries username/password beside users.json. A Secret the user named
// (spec.security.auth.usersSecret) may hold only users.json: then there is no
// single login to print, and the output says where the users are.
// Pure: the cluster and the Secret (as read) are inputs.

import type { V1Secret } from "@kubernetes/client-node";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import { resourceNames } from "../../../packages/api/src/v1alpha1/names.ts";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_HTTP_PORT, BROKER_USERS_KEY } from "../constants.ts";
import { usersSecretName } from "../specs/secrets.ts";

export interface ConnectionInfo {
  cluster: string;
  namespace: string;
  /** The client Service's in-cluster URL. */
  url: string;
  auth: boolean;
  /** spec.security.tls.secretName when the brokers serve HTTPS (its ca.crt verifies them). */
  tlsSecret?: string;
  /** The users Secret, when auth is on. */
  usersSecret?: string;
  username?: string;
  password?: string;
  /** Why no username/password is shown although auth is on. */
  note?: string;
}

/** The users Secret to read for this cluster; undefined when auth is off. */
export function usersSecretToRead(cluster: NaradCluster): string | undefined {
  const spec = withClusterDefaults(cluster.spec ?? {});
  return spec.security.auth.enabled ? usersSecretName(cluster.metadata.name ?? "", spec) : undefined;
}

export function connectionInfo(cluster: NaradCluster, usersSecret: V1Secret | undefined): ConnectionInfo {
  const name = cluster.metadata.name ?? "";
  const namespace = cluster.metadata.namespace ?? "";
  const spec = withClusterDefaults(cluster.spec ?? {});
  const scheme = spec.security.tls === undefined ? "http" : "https";
  const info: ConnectionInfo = {
    cluster: name,
    namespace,
    url: `${scheme}://${resourceNames(name).clientService}.${namespace}.svc:${BROKER_HTTP_PORT}`,
    auth: spec.security.auth.enabled,
  };
  if (spec.security.tls !== undefined) info.tlsSecret = spec.security.tls.secretName;
  const secretName = usersSecretToRead(cluster);
  if (secretName === undefined) return info;
  info.usersSecret = secretName;
  if (usersSecret === undefined) {
    info.note = `Secret ${namespace}/${secretName} does not exist yet (the operator creates it when the cluster names none)`;
    return info;
  }
  const username = secretValue(usersSecret, "username");
  const password = secretValue(usersSecret, "password");
  if (username !== undefined && password !== undefined) {
    info.username = username;
    info.password = password;
  } else {
    info.note = `Secret ${namespace}/${secretName} has no username/password keys: its users are in ${BROKER_USERS_KEY}`;
  }
  return info;
}

export function secretValue(secret: V1Secret, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const b64 = secret.data?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");
}

export function renderCredentials(info: ConnectionInfo): string {
  const lines = [`URL:       ${info.url}`];
  if (!info.auth) lines.push("Auth:      off (spec.security.auth.enabled: false)");
  if (info.username !== undefined && info.password !== undefined) {
    lines.push(`Username:  ${info.username}`, `Password:  ${info.password}`);
  }
  if (info.usersSecret !== undefined) lines.push(`Secret:    ${info.namespace}/${info.usersSecret}`);
  if (info.tlsSecret !== undefined)
    lines.push(`TLS:       verify with ca.crt of Secret ${info.namespace}/${info.tlsSecret}`);
  if (info.note !== undefined) lines.push(`Note:      ${info.note}`);
  lines.push("", "From a pod in the cluster:");
  const login = info.username !== undefined ? ` -u ${info.username}:${info.password}` : "";
  lines.push(`  curl${login} ${info.url}/v1/topics`);
  return `${lines.join("\n")}\n`;
}
