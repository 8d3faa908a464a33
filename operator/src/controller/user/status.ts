// Writes a NaradUser's status (shared by the CR-managed reconcile and the mirrors).

import type { Logger } from "pino";
import type { NaradUser, NaradUserStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { USER_PLURAL } from "../../constants.ts";
import { setCondition } from "../../plan/conditions.ts";
import { canonicalJson } from "../../specs/canonical-json.ts";
import type { ReconcileDeps } from "../deps.ts";

export interface ReadyInput {
  ready: boolean;
  reason: string;
  message: string;
  username: string;
  secret?: string | undefined;
  userCreatedAtMs?: number | undefined;
}

/** The next status: Ready with its reason, plus what it names; no write when nothing changed. */
export async function writeUserStatus(
  user: NaradUser,
  r: ReadyInput,
  deps: ReconcileDeps,
  log: Logger,
): Promise<void> {
  const prev: NaradUserStatus = user.status ?? {};
  const generation = user.metadata.generation ?? 0;
  const next: NaradUserStatus = {
    ...prev,
    observedGeneration: generation,
    username: r.username,
    conditions: setCondition(
      prev.conditions,
      {
        type: "Ready",
        status: r.ready ? "True" : "False",
        reason: r.reason,
        message: r.message,
        observedGeneration: generation,
      },
      new Date(deps.clock.now()).toISOString(),
    ),
  };
  if (r.secret !== undefined) next.secret = r.secret;
  if (r.userCreatedAtMs !== undefined) next.userCreatedAtMs = r.userCreatedAtMs;
  if (canonicalJson(prev) === canonicalJson(next)) return;
  const { namespace = "", name = "" } = user.metadata;
  log.info({ ready: r.ready, reason: r.reason }, r.message);
  await deps.api.patchStatus(
    { plural: USER_PLURAL, namespace, name },
    next,
    user.metadata.resourceVersion ?? "",
  );
}
