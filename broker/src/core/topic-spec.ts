// Validation of topic create and patch requests, with the defaults applied.
// Pure: returns a TopicConfig or throws a 400 NaradError naming the field.

import { badRequest } from "../errors.ts";
import type { NewTopic, SubscriptionConfig, TopicPatch } from "../meta/types.ts";
import { firstSchema, nextSchema } from "./topic-schema.ts";

export interface TopicDefaults {
  partitions: number;
  partitionsMin: number;
  partitionsMax: number;
  retentionMs: number;
  visibilityTimeoutMs: number;
  maxInFlight: number;
  maxAckedAhead: number;
  namePattern: RegExp;
  /** Consumer group / subscription names (shorter than topics: they become file names with a suffix). */
  groupNamePattern?: RegExp;
}

const createFields = new Set([
  "name",
  "partitions",
  "retention_ms",
  "retention_bytes",
  "visibility_timeout_ms",
  "max_in_flight_per_partition",
  "max_acked_ahead_per_partition",
  "subscriptions",
  "schema",
  // Validated and defaulted by core/topic-replication.ts (they need the cluster's size).
  "replication_factor",
  "min_insync_replicas",
  // Accepted and dropped, as Narad v1: the server sets the owner (the creator).
  "owner",
]);
/** Fan-out fields of a create: taken out by the route (fanout/links.ts) before the rest is parsed here. */
export const createLinkFields = ["parent", "fanout_delay_ms"] as const;
const patchFields = new Set([
  "partitions",
  "retention_ms",
  "retention_bytes",
  "max_in_flight_per_partition",
  "max_acked_ahead_per_partition",
  "subscriptions",
  "schema",
  // core/topic-replication.ts: the factor is immutable, the minimum may change.
  "replication_factor",
  "min_insync_replicas",
]);
const subscriptionFields = new Set([
  "visibility_timeout_ms",
  "max_in_flight_per_partition",
  "max_acked_ahead_per_partition",
]);
/** Most declared subscriptions per topic (the NaradTopic CRD has the same maxItems). */
export const subscriptionsMax = 100;

export function validTopicName(name: unknown, pattern: RegExp): name is string {
  return typeof name === "string" && pattern.test(name) && name !== "." && name !== "..";
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest("request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function checkFields(obj: Record<string, unknown>, allowed: Set<string>): void {
  for (const field of Object.keys(obj)) {
    if (!allowed.has(field)) throw badRequest(`unknown field "${field}"`);
  }
}

function intField(obj: Record<string, unknown>, field: string, min: number, max: number): number | undefined {
  const v = obj[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw badRequest(`${field} must be an integer`);
  if (v < min || v > max) throw badRequest(`${field} must be between ${min} and ${max}`);
  return v;
}

/**
 * The settings of one subscription (PUT /v1/topics/{t}/groups/{g} body, or
 * an element of `subscriptions` without its name). Group names follow the
 * topic name rule.
 */
export function parseSubscription(name: unknown, body: unknown, d: TopicDefaults): SubscriptionConfig {
  // Group names must also fit a file name with the frontier suffix (constants.ts groupNamePattern).
  const pattern = d.groupNamePattern ?? d.namePattern;
  if (!validTopicName(name, pattern)) throw badRequest(`subscription name must match ${pattern.source}`);
  const obj = asObject(body ?? {});
  for (const field of Object.keys(obj)) {
    if (!subscriptionFields.has(field)) throw badRequest(`unknown subscription field "${field}"`);
  }
  const big = Number.MAX_SAFE_INTEGER;
  const sub: SubscriptionConfig = { name };
  const vis = intField(obj, "visibility_timeout_ms", 1, big);
  if (vis !== undefined) sub.visibility_timeout_ms = vis;
  const inflight = intField(obj, "max_in_flight_per_partition", 1, big);
  if (inflight !== undefined) sub.max_in_flight_per_partition = inflight;
  const ahead = intField(obj, "max_acked_ahead_per_partition", 1, big);
  if (ahead !== undefined) sub.max_acked_ahead_per_partition = ahead;
  return sub;
}

/** A `subscriptions` list: names valid and unique, sorted by name. */
export function parseSubscriptions(value: unknown, d: TopicDefaults): SubscriptionConfig[] {
  if (!Array.isArray(value)) throw badRequest("subscriptions must be an array");
  if (value.length > subscriptionsMax)
    throw badRequest(`subscriptions may hold at most ${subscriptionsMax} entries`);
  const seen = new Set<string>();
  const out: SubscriptionConfig[] = [];
  for (const item of value) {
    const obj = asObject(item);
    const { name, ...settings } = obj;
    const sub = parseSubscription(name, settings, d);
    if (seen.has(sub.name)) throw badRequest(`subscription "${sub.name}" is listed twice`);
    seen.add(sub.name);
    out.push(sub);
  }
  return sortSubscriptions(out);
}

export function sortSubscriptions(subs: SubscriptionConfig[]): SubscriptionConfig[] {
  return subs.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The topic's subscription list with `sub` added or replaced. */
export function withSubscription(topic: NewTopic, sub: SubscriptionConfig): SubscriptionConfig[] {
  const rest = (topic.subscriptions ?? []).filter((s) => s.name !== sub.name);
  if (rest.length >= subscriptionsMax)
    throw badRequest(`subscriptions may hold at most ${subscriptionsMax} entries`);
  return sortSubscriptions([...rest, sub]);
}

export function parseTopicCreate(body: unknown, d: TopicDefaults, now: Date): NewTopic {
  const obj = asObject(body);
  checkFields(obj, createFields);
  if (!validTopicName(obj.name, d.namePattern)) {
    throw badRequest(`name must match ${d.namePattern.source}`);
  }
  // As in Narad v1: 0 (or absent) for retention, visibility and the two caps
  // means the broker's default.
  const orDefault = (field: string, fallback: number): number => {
    const v = intField(obj, field, 0, Number.MAX_SAFE_INTEGER);
    return v === undefined || v === 0 ? fallback : v;
  };
  return {
    name: obj.name,
    partitions: intField(obj, "partitions", d.partitionsMin, d.partitionsMax) ?? d.partitions,
    retention_ms: orDefault("retention_ms", d.retentionMs),
    retention_bytes: intField(obj, "retention_bytes", 0, Number.MAX_SAFE_INTEGER) ?? 0,
    visibility_timeout_ms: orDefault("visibility_timeout_ms", d.visibilityTimeoutMs),
    max_in_flight_per_partition: orDefault("max_in_flight_per_partition", d.maxInFlight),
    max_acked_ahead_per_partition: orDefault("max_acked_ahead_per_partition", d.maxAckedAhead),
    created_at: now.toISOString(),
    ...(obj.subscriptions === undefined || obj.subscriptions === null
      ? {}
      : { subscriptions: parseSubscriptions(obj.subscriptions, d) }),
    ...(obj.schema === undefined || obj.schema === null ? {} : { schema: firstSchema(obj.schema) }),
  };
}

export function parseTopicPatch(body: unknown, current: NewTopic, d: TopicDefaults): TopicPatch {
  const obj = asObject(body);
  if ("visibility_timeout_ms" in obj) throw badRequest("visibility_timeout_ms cannot be changed");
  checkFields(obj, patchFields);
  if (Object.keys(obj).length === 0) throw badRequest("patch names no field to change");
  const big = Number.MAX_SAFE_INTEGER;
  const patch: TopicPatch = {};
  const partitions = intField(obj, "partitions", d.partitionsMin, d.partitionsMax);
  if (partitions !== undefined) {
    // Narad v1 refuses a patch that does not grow the partition count.
    if (partitions <= current.partitions)
      throw badRequest(`partitions can only be increased (the topic has ${current.partitions})`);
    patch.partitions = partitions;
  }
  const retention = intField(obj, "retention_ms", 0, big);
  if (retention !== undefined) patch.retention_ms = retention === 0 ? d.retentionMs : retention;
  const retentionBytes = intField(obj, "retention_bytes", 0, big);
  if (retentionBytes !== undefined) patch.retention_bytes = retentionBytes;
  const inflight = intField(obj, "max_in_flight_per_partition", 1, big);
  if (inflight !== undefined) patch.max_in_flight_per_partition = inflight;
  const ahead = intField(obj, "max_acked_ahead_per_partition", 1, big);
  if (ahead !== undefined) patch.max_acked_ahead_per_partition = ahead;
  // Replaces the whole list (null or [] clears it).
  if ("subscriptions" in obj)
    patch.subscriptions = obj.subscriptions === null ? [] : parseSubscriptions(obj.subscriptions, d);
  // Each schema given is a new version, refused unless additive (topic-schema.ts).
  if ("schema" in obj) patch.schema = nextSchema(current.schema, obj.schema);
  return patch;
}
