// Fan-out link rules (Narad v1's): which attach, create-as-child, retention
// change and schema change are allowed. Pure: decides from topic configs and
// answers a NaradError (400/404/409) or nothing; the routes store the result.

import type { NaradError } from "../errors.ts";
import { badRequest, conflict, topicNotFound } from "../errors.ts";
import type { TopicConfig } from "../meta/types.ts";

/** Most children one parent may fan out to (each is one more cursor per parent partition). */
export const maxChildrenPerParent = 108;
/** Longest delay of a delay child: one year. */
export const maxFanoutDelayMs = 365 * 24 * 60 * 60 * 1000;
/** The parent keeps a delay child's records at least this long past the delay (the cursor's slack). */
export const delayRetentionSlackMs = 60 * 60 * 1000;

export type Role = "standalone" | "parent" | "child";

type Linkable = Pick<TopicConfig, "name" | "parent" | "fanout_delay_ms" | "attached_at_ms">;

/** The children of `parent`, in attach order (then by name). */
export function childrenOf<T extends Linkable>(topics: readonly T[], parent: string): T[] {
  return topics
    .filter((t) => t.parent === parent)
    .sort((a, b) => (a.attached_at_ms ?? 0) - (b.attached_at_ms ?? 0) || (a.name < b.name ? -1 : 1));
}

export function roleOf(topic: Linkable, topics: readonly Linkable[]): Role {
  if (topic.parent !== undefined) return "child";
  return topics.some((t) => t.parent === topic.name) ? "parent" : "standalone";
}

/** A delay the parent's retention can hold: retention 0 keeps forever. */
export function retentionHoldsDelay(retentionMs: number, delayMs: number): boolean {
  return delayMs <= 0 || retentionMs <= 0 || retentionMs >= delayMs + delayRetentionSlackMs;
}

/** Why `delay` is not a valid fan-out delay, or undefined. */
export function delayProblem(delay: unknown): NaradError | undefined {
  if (typeof delay !== "number" || !Number.isSafeInteger(delay))
    return badRequest("delay_ms must be an integer");
  if (delay < 0) return badRequest("delay_ms must be >= 0");
  if (delay > maxFanoutDelayMs)
    return badRequest(`delay_ms (${delay}) exceeds the maximum of ${maxFanoutDelayMs} (1 year)`);
  return undefined;
}

/**
 * Whether `child` may be attached to `parent` with `delayMs` (both names as
 * given; `topics` is the metastore's list). Checks in Narad's order: shape
 * (400), existence (404), links (409), retention (400), schema (409).
 */
export function attachProblem(
  topics: readonly TopicConfig[],
  parentName: string,
  childName: string,
  delayMs: number,
): NaradError | undefined {
  if (parentName === childName) return badRequest("a topic cannot be attached to itself");
  const bad = delayProblem(delayMs);
  if (bad !== undefined) return bad;
  const parent = topics.find((t) => t.name === parentName);
  if (parent === undefined) return topicNotFound(parentName);
  const child = topics.find((t) => t.name === childName);
  if (child === undefined) return topicNotFound(childName);
  if (child.parent === parentName) return conflict(`"${childName}" is already a child of "${parentName}"`);
  if (child.parent !== undefined) return conflict(`"${childName}" is already a child of "${child.parent}"`);
  if (parent.parent !== undefined)
    return conflict(`"${parentName}" is a child of "${parent.parent}": fan-out is one level deep`);
  if (topics.some((t) => t.parent === childName))
    return conflict(`"${childName}" has children of its own: fan-out is one level deep`);
  if (childrenOf(topics, parentName).length >= maxChildrenPerParent)
    return conflict(`"${parentName}" already has ${maxChildrenPerParent} children, the maximum`);
  if (!retentionHoldsDelay(parent.retention_ms, delayMs))
    return badRequest(
      `the parent's retention_ms (${parent.retention_ms}) must be at least delay_ms + 1h (${delayMs + delayRetentionSlackMs}) or 0`,
    );
  return schemaProblem(parent, child);
}

/** A child adopts the parent's schema: one of its own that differs is a conflict. */
function schemaProblem(parent: TopicConfig, child: TopicConfig): NaradError | undefined {
  if (child.schema === undefined) return undefined;
  if (parent.schema === undefined)
    return conflict(`"${child.name}" has a schema and its parent "${parent.name}" has none`);
  if (parent.schema.definition !== child.schema.definition)
    return conflict(`the schema of "${child.name}" differs from its parent "${parent.name}"'s`);
  return undefined;
}

/** A retention change of `topic` that would let a delay child's records age out first: 400. */
export function retentionPatchProblem(
  topics: readonly TopicConfig[],
  topic: string,
  retentionMs: number,
): NaradError | undefined {
  for (const c of childrenOf(topics, topic)) {
    const delay = c.fanout_delay_ms ?? 0;
    if (!retentionHoldsDelay(retentionMs, delay))
      return badRequest(
        `retention_ms (${retentionMs}) must be at least ${delay + delayRetentionSlackMs} (delay child "${c.name}" has delay_ms ${delay}, plus 1h) or 0`,
      );
  }
  return undefined;
}

/** An attached child's schema follows its parent's: a PATCH of it is a conflict. */
export function childSchemaPatchProblem(topic: TopicConfig): NaradError | undefined {
  return topic.parent === undefined
    ? undefined
    : conflict(`"${topic.name}" is a child of "${topic.parent}": its schema is the parent's`);
}

/** A delay child's records come only from its parent: a direct produce is a conflict. */
export function directProduceProblem(topic: TopicConfig): NaradError | undefined {
  return topic.parent !== undefined && (topic.fanout_delay_ms ?? 0) > 0
    ? conflict(`"${topic.name}" is a delay child of "${topic.parent}": produce to the parent`)
    : undefined;
}
