// Create-as-child: POST /v1/topics with `parent` (and `fanout_delay_ms`)
// creates the topic already linked, in one metastore write, so there is no
// half-linked topic to roll back. Partitions left at 0 or absent inherit
// the parent's count.

import { badRequest, topicExists, topicNotFound } from "../errors.ts";
import type { Metastore, NewTopic, TopicConfig } from "../meta/types.ts";
import { newAttachEpoch } from "./epoch.ts";
import { attachProblem, delayProblem } from "./rules.ts";

export interface CreateLink {
  parent: string;
  delayMs: number;
}

/**
 * Takes `parent` and `fanout_delay_ms` out of a create body (the rest goes to
 * parseTopicCreate) and checks what can be checked before the topic exists.
 */
export function splitCreateLink(
  body: unknown,
  getTopic: (name: string) => TopicConfig | undefined,
): { body: unknown; link?: CreateLink } {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { body };
  const { parent, fanout_delay_ms: delay, ...rest } = body as Record<string, unknown>;
  const noDelay = delay === undefined || delay === null || delay === 0;
  if (parent === undefined || parent === null || parent === "") {
    if (!noDelay) throw badRequest("fanout_delay_ms needs parent");
    return { body: rest };
  }
  if (typeof parent !== "string") throw badRequest("parent must be a topic name");
  const delayMs = noDelay ? 0 : delay;
  const bad = delayProblem(delayMs);
  if (bad !== undefined) throw bad;
  if (parent === rest.name) throw badRequest("a topic cannot be its own parent");
  const p = getTopic(parent);
  if (p === undefined) throw topicNotFound(parent);
  // Partitions 0 or absent: the parent's count (so child partition p holds parent partition p's keys).
  const partitions = rest.partitions === undefined || rest.partitions === 0 ? p.partitions : rest.partitions;
  return { body: { ...rest, partitions }, link: { parent, delayMs: delayMs as number } };
}

/** Creates `topic` linked under `link.parent` after the attach rules pass (fanout/rules.ts). */
export async function createAsChild(
  ms: Metastore,
  topic: NewTopic,
  link: CreateLink,
  nowMs: number,
): Promise<TopicConfig> {
  if (ms.getTopic(topic.name) !== undefined) throw topicExists(topic.name);
  const parent = ms.getTopic(link.parent);
  if (parent === undefined) throw topicNotFound(link.parent);
  // Decided as an attach of the topic-to-be (its own schema, if any, must be the parent's).
  const candidate: TopicConfig = { ...topic, uid: "" };
  const problem = attachProblem([...ms.listTopics(), candidate], link.parent, topic.name, link.delayMs);
  if (problem !== undefined) throw problem;
  return ms.createTopic({
    ...topic,
    ...(parent.schema !== undefined ? { schema: parent.schema } : {}),
    parent: link.parent,
    ...(link.delayMs > 0 ? { fanout_delay_ms: link.delayMs } : {}),
    attach_epoch: newAttachEpoch(),
    attached_at_ms: nowMs,
  });
}
