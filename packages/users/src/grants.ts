// RBAC decisions, pure: actions, topic patterns and which grant allows what.
// Actions as in Narad v1: produce, consume (also ack), create, admin. A
// pattern is an exact topic name or a prefix ending in "*". The user named
// "admin" is root and may do everything.

export const actions = ["produce", "consume", "create", "admin"] as const;
export type Action = (typeof actions)[number];

export interface Grant {
  action: Action;
  /** Exact topic name, or a prefix followed by "*" ("*" alone: every topic). */
  topics: string;
  /**
   * Consumer groups this grant covers, same pattern syntax; absent: every
   * group (what a grant meant before groups could be named). Only consume
   * requests name a group; other actions ignore it.
   */
  groups?: string;
}

export const rootUser = "admin";

export function isAction(value: unknown): value is Action {
  return typeof value === "string" && (actions as readonly string[]).includes(value);
}

export function patternMatches(pattern: string, topic: string): boolean {
  if (pattern.endsWith("*")) return topic.startsWith(pattern.slice(0, -1));
  return pattern === topic;
}

/**
 * Whether a user holding `grants` may do `action` on `topic` (undefined: an
 * action on no particular topic, e.g. the admin API, which then needs a grant
 * for every topic: pattern "*").
 */
export function allows(
  user: { name: string; grants: readonly Grant[] },
  action: Action,
  topic: string | undefined,
  group?: string,
): boolean {
  if (user.name === rootUser) return true;
  return user.grants.some(
    (g) =>
      (g.action === action || g.action === "admin") &&
      (topic === undefined ? g.topics === "*" : patternMatches(g.topics, topic)) &&
      (group === undefined || g.groups === undefined || patternMatches(g.groups, group)),
  );
}

export class GrantError extends Error {}

const patternRe = /^[A-Za-z0-9._-]*\*?$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * One grant checked as input (a users file, the users document, a NaradUser's
 * spec): unknown fields, actions and malformed patterns are refused with a
 * GrantError saying what is wrong.
 */
export function parseGrant(raw: unknown): Grant {
  if (!isObject(raw)) throw new GrantError("must be an object {action, topics}");
  for (const key of Object.keys(raw))
    if (key !== "action" && key !== "topics" && key !== "groups")
      throw new GrantError(`unknown field "${key}"`);
  if (!isAction(raw.action)) throw new GrantError("action must be produce, consume, create or admin");
  const topics = raw.topics;
  if (typeof topics !== "string" || topics === "" || !patternRe.test(topics))
    throw new GrantError('topics must be a topic name or a prefix ending in "*"');
  if (raw.groups === undefined) return { action: raw.action, topics };
  const groups = raw.groups;
  if (typeof groups !== "string" || groups === "" || !patternRe.test(groups))
    throw new GrantError('groups must be a group name or a prefix ending in "*"');
  return { action: raw.action, topics, groups };
}
