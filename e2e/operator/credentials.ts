// Credentials for e2e suites that talk to brokers run by the operator: the
// operator creates "<cluster>-users" (spec.security) with an admin user; a
// suite reads it like a user would (kubectl get secret) and sends Basic auth.
import { withClusterDefaults } from "../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradClusterSpec } from "../../packages/api/src/v1alpha1/types.ts";
import type { CommandRunner } from "../platform/helpers.ts";
import { waitFor } from "../platform/platform.ts";
import type { HeaderSource } from "./load.ts";

export interface AdminCredentials {
  username: string;
  password: string;
  /** The cluster's shared RPC secret (also accepted as an admin bearer token). */
  clusterSecret: string | undefined;
}

async function secretData(
  kubectl: CommandRunner,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const r = await kubectl(["-n", namespace, "get", "secret", name, "-o", "json"], { allowFailure: true });
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get secret ${name}: ${r.stderr}`);
  }
  const data = (JSON.parse(r.stdout) as { data?: Record<string, string> }).data ?? {};
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
}

/** Waits for the operator-created users Secret and returns the admin's credentials. */
export async function adminCredentials(
  kubectl: CommandRunner,
  namespace: string,
  cluster: string,
  opts: { usersSecret?: string; timeoutMs?: number } = {},
): Promise<AdminCredentials> {
  const users = await waitFor(
    async () => secretData(kubectl, namespace, opts.usersSecret ?? `${cluster}-users`),
    {
      timeoutMs: opts.timeoutMs ?? 120_000,
      what: `Secret ${namespace}/${opts.usersSecret ?? `${cluster}-users`}`,
      intervalMs: 500,
    },
  );
  const username = users["username"];
  const password = users["password"];
  if (username === undefined || password === undefined)
    throw new Error(`Secret ${cluster}-users has no username/password keys`);
  const rpc = await secretData(kubectl, namespace, `${cluster}-cluster-secret`);
  return { username, password, clusterSecret: rpc?.["secret"]?.trim() };
}

export function basicAuth(username: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}` };
}

/** Whether the NaradCluster's brokers require credentials (spec.security.auth.enabled, else the operator's default). */
export async function clusterAuthEnabled(
  kubectl: CommandRunner,
  namespace: string,
  cluster: string,
): Promise<boolean> {
  const r = await kubectl(["-n", namespace, "get", "naradcluster", cluster, "-o", "json"]);
  const spec = (JSON.parse(r.stdout) as { spec?: NaradClusterSpec }).spec;
  return withClusterDefaults(spec).security.auth.enabled;
}

/**
 * Header source for load.ts helpers and direct fetches: Basic admin from the
 * users Secret when the cluster has auth on, no headers when it is off, so
 * suites call it whatever the default is.
 */
export async function clusterCredentials(
  kubectl: CommandRunner,
  namespace: string,
  cluster: string,
  opts: { usersSecret?: string; timeoutMs?: number } = {},
): Promise<HeaderSource> {
  if (!(await clusterAuthEnabled(kubectl, namespace, cluster))) return () => ({});
  const c = await adminCredentials(kubectl, namespace, cluster, opts);
  const headers = basicAuth(c.username, c.password);
  return () => ({ ...headers });
}
