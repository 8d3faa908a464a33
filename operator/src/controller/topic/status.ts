// Writes a NaradTopic's status, shared by the reconcile and the data-deletion
// step (its own module so that neither imports the other).

import type { Logger } from "pino";
import type { NaradTopic, NaradTopicStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { TOPIC_PLURAL } from "../../constants.ts";
import { canonicalJson } from "../../specs/canonical-json.ts";
import type { ReconcileDeps } from "../deps.ts";

/** Patches status with the object's resourceVersion as precondition; no write when nothing changed. */
export async function writeTopicStatus(
  topic: NaradTopic,
  prev: NaradTopicStatus,
  next: NaradTopicStatus,
  deps: ReconcileDeps,
  log: Logger,
): Promise<void> {
  if (canonicalJson(prev) === canonicalJson(next)) {
    log.debug("status unchanged; not writing");
    return;
  }
  const { namespace = "", name = "" } = topic.metadata;
  await deps.api.patchStatus(
    { plural: TOPIC_PLURAL, namespace, name },
    next,
    topic.metadata.resourceVersion ?? "",
  );
}
