// The operator's writes to a cluster's API users Secret
// (`<cluster>-api-users`, key users.json), the same compare-and-swap the
// brokers use: GET, compute the change on what was read, merge patch
// guarded by that read's resourceVersion; a 409 (a broker or another
// write came first) reads again and recomputes, so no write is ever
// computed on a state it does not replace, and no other user's entry (or
// password hash) is lost to a race.

import { resourceNames } from "../../../../packages/api/src/v1alpha1/names.ts";
import {
  type ApiUser,
  decodeUsersDocument,
  encodeUsersDocument,
  usersDocumentKey,
} from "../../../../packages/users/src/document.ts";
import { USER_WRITE_ATTEMPTS } from "../../constants.ts";
import { httpStatus, type KubeApi } from "../../kube/api.ts";

export type UsersRead =
  | { kind: "present"; users: Map<string, ApiUser>; resourceVersion: string }
  /** No Secret: the cluster has no Users API (auth off) or is not reconciled yet. */
  | { kind: "missing" }
  /** A document that fails the checks: nothing is written over it. */
  | { kind: "invalid"; reason: string };

export function usersSecretName(cluster: string): string {
  return resourceNames(cluster).apiUsers;
}

export async function readUsers(api: KubeApi, namespace: string, cluster: string): Promise<UsersRead> {
  const secret = await api.getSecret(namespace, usersSecretName(cluster));
  if (secret === undefined) return { kind: "missing" };
  const rv = secret.metadata?.resourceVersion ?? "";
  const raw = secret.data?.[usersDocumentKey];
  if (raw === undefined) return { kind: "present", users: new Map(), resourceVersion: rv };
  try {
    return {
      kind: "present",
      users: decodeUsersDocument(Buffer.from(raw, "base64").toString("utf8")),
      resourceVersion: rv,
    };
  } catch (err) {
    return { kind: "invalid", reason: (err as Error).message };
  }
}

export type ChangeOutcome<T> =
  | { kind: "done"; written: boolean; result: T }
  | { kind: "missing" }
  | { kind: "invalid"; reason: string };

/**
 * Runs `fn` on a fresh read and writes its `next` (if any) under the read's
 * resourceVersion, again on a fresh read after a 409. `fn` may run more than
 * once, so it must decide from its argument only.
 */
export async function changeUsers<T>(
  api: KubeApi,
  namespace: string,
  cluster: string,
  fn: (users: ReadonlyMap<string, ApiUser>) => Promise<{ next: Map<string, ApiUser> | undefined; result: T }>,
): Promise<ChangeOutcome<T>> {
  for (let attempt = 1; ; attempt++) {
    const read = await readUsers(api, namespace, cluster);
    if (read.kind !== "present") return read;
    const { next, result } = await fn(read.users);
    if (next === undefined) return { kind: "done", written: false, result };
    const data = { [usersDocumentKey]: Buffer.from(encodeUsersDocument(next), "utf8").toString("base64") };
    try {
      await api.patchSecretData(namespace, usersSecretName(cluster), data, read.resourceVersion);
      return { kind: "done", written: true, result };
    } catch (err) {
      if (httpStatus(err) !== 409 || attempt >= USER_WRITE_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}
