// Attach and detach, as metastore writes: the link lives on the child
// (parent, fanout_delay_ms, attach_epoch, attached_at_ms), so one write makes
// or breaks it and a parent's children are the topics naming it.

import { NaradError } from "../errors.ts";
import { SerialByKey } from "../http/serial-by-key.ts";
import type { Metastore, TopicConfig, TopicSchema } from "../meta/types.ts";
import { newAttachEpoch } from "./epoch.ts";
import { attachProblem } from "./rules.ts";

/**
 * One link change at a time on this node, so the limits (one parent, 108
 * children) are decided against the state the previous change left.
 */
export const linkChanges = new SerialByKey();

/** Links `child` under `parent` (checks fanout/rules.ts first); the child adopts the parent's schema. */
export async function attachChild(
  ms: Metastore,
  parentName: string,
  childName: string,
  delayMs: number,
  nowMs: number,
): Promise<TopicConfig> {
  const problem = attachProblem(ms.listTopics(), parentName, childName, delayMs);
  if (problem !== undefined) throw problem;
  const parent = ms.getTopic(parentName) as TopicConfig;
  const child = ms.getTopic(childName) as TopicConfig;
  return ms.updateTopic(childName, {
    parent: parentName,
    fanout_delay_ms: delayMs > 0 ? delayMs : undefined,
    attach_epoch: newAttachEpoch(),
    attached_at_ms: nowMs,
    ...adoptedSchema(parent, child),
  });
}

/**
 * The parent's schema for the child, unless the child already has it (the
 * rules admit only the same definition): a version number never goes back,
 * which the NaradTopic CRD enforces too.
 */
export function adoptedSchema(parent: TopicConfig, child: TopicConfig): { schema?: TopicSchema } {
  if (parent.schema === undefined) return {};
  if (child.schema !== undefined && child.schema.version >= parent.schema.version) return {};
  return { schema: parent.schema };
}

/** Unlinks `child` from `parent`: 404 when either is missing or not linked so. The child keeps its schema. */
export async function detachChild(ms: Metastore, parentName: string, childName: string): Promise<void> {
  const child = ms.getTopic(childName);
  if (ms.getTopic(parentName) === undefined || child === undefined || child.parent !== parentName)
    throw new NaradError("NOT_FOUND", `"${childName}" is not a child of "${parentName}"`);
  await ms.updateTopic(childName, {
    parent: undefined,
    fanout_delay_ms: undefined,
    attach_epoch: undefined,
    attached_at_ms: undefined,
  });
}

/** A deleted parent's children become standalone (their cursors stop with the link). */
export async function detachAllChildren(ms: Metastore, parentName: string): Promise<void> {
  for (const c of ms.listTopics().filter((t) => t.parent === parentName)) {
    // Deleted meanwhile: nothing left to unlink.
    if (ms.getTopic(c.name) === undefined) continue;
    await ms.updateTopic(c.name, {
      parent: undefined,
      fanout_delay_ms: undefined,
      attach_epoch: undefined,
      attached_at_ms: undefined,
    });
  }
}

/**
 * Deletes `name`, its children unlinked first. The link names the parent by
 * name only, so the other order (delete, then unlink) left a crash window in
 * which a child kept naming a topic that was gone, and the next topic created
 * with that name, a different topic, silently became its parent under the
 * old epoch. Unlinked first, a crash leaves a parent still there with fewer
 * children (the DELETE was not answered; a retry finishes it).
 */
export async function deleteParentUnlinking(ms: Metastore, name: string): Promise<void> {
  await detachAllChildren(ms, name);
  await ms.deleteTopic(name);
}

/** A parent's new schema version becomes its children's (they adopt the parent's schema). */
export async function propagateSchema(ms: Metastore, parentName: string, schema: TopicSchema): Promise<void> {
  for (const c of ms.listTopics().filter((t) => t.parent === parentName))
    await ms.updateTopic(c.name, { schema });
}
