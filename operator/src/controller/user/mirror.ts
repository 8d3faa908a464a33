// Mirrors of users created through the Users API (decide.ts has the rule):
//   - mirrorCluster, every USER_MIRROR_INTERVAL_MS per NaradCluster: reads
//     its API users Secret, creates a NaradUser (managed-by: api) for each
//     user no NaradUser names, deletes mirrors whose user is gone, and
//     queues every mirror for syncMirror;
//   - syncMirror, per mirror: the 3-way merge of grants; a CR edit is
//     written to the users Secret (compare-and-swap), an API change to the
//     CR's spec. The password is never touched: it stays the API's.

import type { Logger } from "pino";
import { userName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradUser } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  ANNOTATION_SYNCED_GRANTS,
  ANNOTATION_USER_MANAGED_BY,
  API_GROUP_VERSION,
  REQUEUE_WAITING_MS,
  USER_KIND,
  USER_MIRROR_INTERVAL_MS,
  USER_PLURAL,
} from "../../constants.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { objectKey, type ReconcileDeps, splitKey } from "../deps.ts";
import {
  encodeGrants,
  isApiManaged,
  MANAGED_BY_API,
  type MirrorSync,
  planMirror,
  planMirrorSync,
} from "./decide.ts";
import { writeUserStatus } from "./status.ts";
import { changeUsers, readUsers } from "./users-secret.ts";

export async function mirrorCluster(
  clusterKey: string,
  deps: ReconcileDeps,
  enqueueUser: (key: string) => void,
): Promise<ReconcileResult> {
  const { namespace, name } = splitKey(clusterKey);
  const cluster = deps.caches.clusters.get(namespace, name);
  if (cluster === undefined || cluster.metadata.deletionTimestamp) return {};
  const log = deps.log.child({ mirror: clusterKey });
  const read = await readUsers(deps.api, namespace, name);
  if (read.kind !== "present") {
    if (read.kind === "invalid")
      log.warn({ reason: read.reason }, "API users Secret not valid; not mirroring");
    return { requeueAfterMs: USER_MIRROR_INTERVAL_MS };
  }
  const crs = deps.caches.users.list(namespace).filter((u) => u.spec?.cluster === name);
  const plan = planMirror(read.users, crs);
  for (const c of plan.create) {
    const mirror: NaradUser = {
      apiVersion: API_GROUP_VERSION,
      kind: USER_KIND,
      metadata: {
        name: c.objectName,
        namespace,
        annotations: {
          [ANNOTATION_USER_MANAGED_BY]: MANAGED_BY_API,
          [ANNOTATION_SYNCED_GRANTS]: encodeGrants(c.grants),
        },
      },
      spec: { cluster: name, grants: c.grants },
    };
    if (await deps.api.createIfAbsent(mirror))
      log.info(`mirrored Users API user ${c.username} as NaradUser ${c.objectName}`);
  }
  for (const r of plan.remove) {
    const uid = r.metadata.uid;
    await deps.api.delete(
      { apiVersion: API_GROUP_VERSION, kind: USER_KIND, namespace, name: r.metadata.name ?? "" },
      uid === undefined ? undefined : { uid },
    );
    log.info(`deleted NaradUser ${r.metadata.name}: its Users API user is gone`);
  }
  for (const s of plan.skipped) log.debug(s, "Users API user not mirrored");
  for (const c of crs) {
    const entry = read.users.get(userName(c));
    if (isApiManaged(c) && entry !== undefined && planMirrorSync(c, entry).kind !== "none")
      enqueueUser(objectKey(namespace, c.metadata.name ?? ""));
  }
  return { requeueAfterMs: USER_MIRROR_INTERVAL_MS };
}

export async function syncMirror(
  user: NaradUser,
  deps: ReconcileDeps,
  log: Logger,
): Promise<ReconcileResult> {
  if (user.metadata.deletionTimestamp) return {};
  const { namespace = "default", name = "" } = user.metadata;
  const username = userName(user);
  const nowMs = deps.clock.now();
  const outcome = await changeUsers<MirrorSync | { kind: "gone" }>(
    deps.api,
    namespace,
    user.spec.cluster,
    async (users) => {
      const entry = users.get(username);
      if (entry === undefined) return { next: undefined, result: { kind: "gone" } };
      const sync = planMirrorSync(user, entry);
      if (sync.kind !== "toApi") return { next: undefined, result: sync };
      const next = new Map(users);
      next.set(username, { ...entry, grants: sync.grants, updated_at_ms: nowMs });
      return { next, result: sync };
    },
  );
  const status = (ready: boolean, reason: string, message: string) =>
    writeUserStatus(user, { ready, reason, message, username }, deps, log);
  if (outcome.kind !== "done") {
    await status(
      false,
      "UsersUnavailable",
      `the API users Secret of ${user.spec.cluster} is ${outcome.kind}`,
    );
    return { requeueAfterMs: REQUEUE_WAITING_MS };
  }
  const result: MirrorSync | { kind: "gone" } = outcome.result;
  if (result.kind === "gone") {
    // The mirror pass deletes it (it re-checks the Secret first).
    return {};
  }
  const ref = { plural: USER_PLURAL, namespace, name };
  const rv = user.metadata.resourceVersion ?? "";
  if (result.kind === "toCr") {
    await deps.api.patchObject(
      ref,
      {
        metadata: { annotations: { [ANNOTATION_SYNCED_GRANTS]: encodeGrants(result.grants) } },
        spec: { grants: result.grants },
      },
      rv,
    );
    log.info("grants changed through the Users API: copied into the NaradUser");
    return {};
  }
  if (result.kind === "toApi" || result.kind === "mark") {
    await deps.api.patchObject(
      ref,
      { metadata: { annotations: { [ANNOTATION_SYNCED_GRANTS]: encodeGrants(result.grants) } } },
      rv,
    );
    if (result.kind === "toApi") {
      log.info("NaradUser grants edited: written to the Users API");
      deps.recorder.record(user, "Normal", "Updated", `grants of ${username} written to the Users API`);
    }
    return {};
  }
  await status(
    true,
    "MirroredFromApi",
    `user ${username} was created through the Users API; grants sync both ways, the password stays the API's`,
  );
  return {};
}
