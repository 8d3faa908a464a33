// Where a CR-managed NaradUser's password comes from: spec.passwordSecret
// (the user's own Secret, read by name), or a Secret the operator generates
// once, named after the NaradUser and owned by it (garbage-collected with
// it), holding keys `username` and `password`. A generated Secret is never
// rewritten: deleting it makes a new password on the next reconcile.

import { randomBytes } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import { USER_PASSWORD_KEY, userName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradUser } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  API_GROUP_VERSION,
  GENERATED_SECRET_BYTES,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  USER_KIND,
} from "../../constants.ts";
import type { KubeApi } from "../../kube/api.ts";

export type PasswordSource =
  | { kind: "ok"; secret: string; password: string }
  | { kind: "waiting"; reason: "PasswordSecretNotFound" | "SecretConflict"; message: string };

export function generatedSecretSpec(user: NaradUser, password: string): V1Secret {
  const { name, namespace, uid } = user.metadata;
  if (name === undefined || uid === undefined)
    throw new Error("generatedSecretSpec: NaradUser without name or uid");
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name,
      namespace: namespace ?? "default",
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY, "narad.dev/user": name },
      ownerReferences: [
        {
          apiVersion: API_GROUP_VERSION,
          kind: USER_KIND,
          name,
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    stringData: { username: userName(user), [USER_PASSWORD_KEY]: password },
  };
}

function secretValue(secret: V1Secret, key: string): string | undefined {
  const raw = secret.data?.[key];
  if (raw !== undefined) return Buffer.from(raw, "base64").toString("utf8");
  return secret.stringData?.[key];
}

/** With create: false (a NaradUser being deleted), a missing generated Secret is not made. */
export async function passwordOf(
  user: NaradUser,
  api: KubeApi,
  o: { create: boolean } = { create: true },
): Promise<PasswordSource> {
  const namespace = user.metadata.namespace ?? "default";
  const ref = user.spec.passwordSecret;
  if (ref !== undefined) {
    const key = ref.key ?? USER_PASSWORD_KEY;
    const secret = await api.getSecret(namespace, ref.name);
    const password = secret === undefined ? undefined : secretValue(secret, key);
    if (password === undefined || password === "")
      return {
        kind: "waiting",
        reason: "PasswordSecretNotFound",
        message: `Secret ${ref.name} with a non-empty key ${key} not found in namespace ${namespace}`,
      };
    return { kind: "ok", secret: ref.name, password };
  }
  const name = user.metadata.name ?? "";
  let secret = await api.getSecret(namespace, name);
  if (secret === undefined && o.create) {
    await api.createIfAbsent(
      generatedSecretSpec(user, randomBytes(GENERATED_SECRET_BYTES).toString("base64url")),
    );
    secret = await api.getSecret(namespace, name);
  }
  const owned = secret?.metadata?.ownerReferences?.some((o) => o.uid === user.metadata.uid) ?? false;
  const password = secret === undefined ? undefined : secretValue(secret, USER_PASSWORD_KEY);
  if (!owned || password === undefined || password === "")
    return {
      kind: "waiting",
      reason: "SecretConflict",
      message: `Secret ${name} exists and is not this NaradUser's generated Secret (set spec.passwordSecret to use it)`,
    };
  return { kind: "ok", secret: name, password };
}
