// NaradUser reconcile (the rule: decide.ts and docs/adr/0009-naraduser.md).
//   - a mirror (managed-by: api): mirror.ts syncs its grants both ways;
//   - CR-managed, not deleting: our finalizer on, the password from its
//     Secret (generated if need be), then the entry written into the
//     cluster's API users Secret (compare-and-swap, users-secret.ts) when
//     it is this NaradUser's own, or a conflict reported when it is not;
//   - CR-managed, deleting: its own entry removed, then the finalizer.

import type { Logger } from "pino";
import { userName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradUser } from "../../../../packages/api/src/v1alpha1/types.ts";
import { hashPassword } from "../../../../packages/users/src/scrypt.ts";
import {
  API_GROUP_VERSION,
  FINALIZER_USER,
  REQUEUE_WAITING_MS,
  USER_KIND,
  USER_PLURAL,
} from "../../constants.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { type ReconcileDeps, splitKey } from "../deps.ts";
import { applyEntry, type EntryPlan, grantsOf, isApiManaged, planEntry, removeOwnEntry } from "./decide.ts";
import { syncMirror } from "./mirror.ts";
import { passwordOf } from "./password-secret.ts";
import { writeUserStatus } from "./status.ts";
import { changeUsers } from "./users-secret.ts";
import { passwordMatchesCached } from "./verified.ts";

export async function reconcileUser(key: string, deps: ReconcileDeps): Promise<ReconcileResult> {
  const { namespace, name } = splitKey(key);
  const log = deps.log.child({ user: key });
  const cached = deps.caches.users.get(namespace, name);
  if (cached === undefined) return {};
  let user: NaradUser = { ...cached, apiVersion: API_GROUP_VERSION, kind: USER_KIND };
  if (isApiManaged(user)) return syncMirror(user, deps, log);
  const ref = { plural: USER_PLURAL, namespace, name };
  const finalizers = user.metadata.finalizers ?? [];

  if (user.metadata.deletionTimestamp) {
    if (!finalizers.includes(FINALIZER_USER)) return {};
    await removeUser(user, deps, log);
    await deps.api.setFinalizers(
      ref,
      finalizers.filter((f) => f !== FINALIZER_USER),
      user.metadata.resourceVersion ?? "",
    );
    log.info(`removed finalizer ${FINALIZER_USER}`);
    return {};
  }

  if (!finalizers.includes(FINALIZER_USER)) {
    const updated = await deps.api.setFinalizers<NaradUser>(
      ref,
      [...finalizers, FINALIZER_USER],
      user.metadata.resourceVersion ?? "",
    );
    user = { ...user, metadata: { ...user.metadata, ...updated.metadata } };
  }

  const username = userName(user);
  const waiting = async (reason: string, message: string, secret?: string): Promise<ReconcileResult> => {
    await writeUserStatus(user, { ready: false, reason, message, username, secret }, deps, log);
    return { requeueAfterMs: REQUEUE_WAITING_MS };
  };

  const cluster = deps.caches.clusters.get(namespace, user.spec.cluster);
  if (cluster === undefined || cluster.metadata.deletionTimestamp)
    return waiting(
      "ClusterNotFound",
      `NaradCluster ${user.spec.cluster} not found in namespace ${namespace}`,
    );

  const source = await passwordOf(user, deps.api);
  if (source.kind === "waiting") return waiting(source.reason, source.message);

  const grants = grantsOf(user.spec.grants);
  // Hashed at most once per reconcile, even when a 409 reruns the change.
  let hash: string | undefined;
  const outcome = await changeUsers<{ plan: EntryPlan; createdAtMs: number | undefined }>(
    deps.api,
    namespace,
    user.spec.cluster,
    async (users) => {
      const existing = users.get(username);
      const matches =
        existing === undefined ? false : await passwordMatchesCached(existing.passwordHash, source.password);
      const plan: EntryPlan = planEntry({
        existing,
        grants,
        ownCreatedAtMs: user.status?.userCreatedAtMs,
        passwordMatches: matches,
      });
      if (plan.kind === "conflict" || plan.kind === "unchanged")
        return { next: undefined, result: { plan, createdAtMs: existing?.created_at_ms } };
      if (plan.kind === "create" || plan.password) hash ??= await hashPassword(source.password);
      const next = applyEntry(users, username, plan, { grants, passwordHash: hash, nowMs: deps.clock.now() });
      return { next, result: { plan, createdAtMs: next.get(username)?.created_at_ms } };
    },
  );
  if (outcome.kind === "missing")
    return waiting(
      "UsersUnavailable",
      `NaradCluster ${user.spec.cluster} has no API users Secret (spec.security.auth off, or not reconciled yet)`,
      source.secret,
    );
  if (outcome.kind === "invalid")
    return waiting(
      "UsersInvalid",
      `the API users Secret is not valid, nothing written: ${outcome.reason}`,
      source.secret,
    );
  const { plan, createdAtMs } = outcome.result;
  if (plan.kind === "conflict") {
    deps.recorder.record(user, "Warning", "UserExists", plan.message);
    return waiting("UserExists", plan.message, source.secret);
  }
  if (outcome.written) {
    const msg = plan.kind === "create" ? `created user ${username}` : `updated user ${username}`;
    deps.recorder.record(user, "Normal", plan.kind === "create" ? "Created" : "Updated", msg);
  }
  await writeUserStatus(
    user,
    {
      ready: true,
      reason: "UserReady",
      message: `user ${username} is in the Users API of ${user.spec.cluster}`,
      username,
      secret: source.secret,
      userCreatedAtMs: createdAtMs,
    },
    deps,
    log,
  );
  return {};
}

/** Removes the entry when it is this NaradUser's own; a cluster without users Secret has nothing to remove. */
async function removeUser(user: NaradUser, deps: ReconcileDeps, log: Logger): Promise<void> {
  const namespace = user.metadata.namespace ?? "default";
  const username = userName(user);
  // The password proves ownership when the status lost its marker; the
  // generated Secret may be gone already, which leaves the marker alone.
  const source = await passwordOf(user, deps.api, { create: false });
  const password = source.kind === "ok" ? source.password : undefined;
  const outcome = await changeUsers(deps.api, namespace, user.spec.cluster, async (users) => {
    const existing = users.get(username);
    const matches =
      existing === undefined || password === undefined
        ? false
        : await passwordMatchesCached(existing.passwordHash, password);
    return {
      next: removeOwnEntry(users, username, user.status?.userCreatedAtMs, matches),
      result: undefined,
    };
  });
  if (outcome.kind === "invalid") throw new Error(`the API users Secret is not valid: ${outcome.reason}`);
  if (outcome.kind === "done" && outcome.written) log.info(`deleted user ${username}`);
}
