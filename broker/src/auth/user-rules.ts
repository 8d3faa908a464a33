// The Users API's decisions, pure (Narad v1's rules): who counts as an
// admin, who may hand out which grants, who may change whose password and
// who may alter or delete a topic. Everything here is a function of values;
// the routes (http/routes/users.ts) do the I/O around it.
//
// - An admin holds the admin action on every topic ("*"), or is root (the
//   user named "admin", or the cluster secret).
// - Only root may confer the admin action; a non-root admin may confer any
//   scoped grant; nobody confers what they do not hold (Narad: CanDelegate).
// - Users from the operator's users file are read-only through the API.
// - Whoever created a topic owns it; the owner or an admin alters and deletes it.

import { apiUsernamePattern } from "../../../packages/users/src/document.ts";
import { allows, type Grant, isAction, rootUser } from "../../../packages/users/src/grants.ts";
import type { Principal } from "./authenticator.ts";

/** Narad's username charset: one path- and log-safe segment (shared with the operator). */
export { apiUsernamePattern };

/** A grant pattern: topic-name characters, an optional single trailing "*". */
const grantPatternRe = /^[A-Za-z0-9._-]{0,255}\*?$/;
/** Bounds a body's grants so a hostile request cannot make the store (or every check) large. */
export const maxGrantsPerUser = 256;
export const maxPasswordBytes = 1024;
/** Names the API never creates: root is the users file's, narad-cluster is the cluster secret's principal. */
const reservedNames = new Set([rootUser, "narad-cluster"]);

export type Refusal = {
  status: 400 | 403 | 404 | 409;
  code:
    | "bad_request"
    | "forbidden"
    | "privilege_escalation"
    | "user_not_found"
    | "user_exists"
    | "user_read_only"
    | "not_topic_owner";
  message: string;
};

/** Where a user comes from: the operator's users file (read-only here) or the API's store. */
export type UserSource = "file" | "api";

export interface TargetUser {
  name: string;
  source: UserSource;
}

/** A caller with no principal is auth off: Narad's dev mode, full access. */
export type Caller = Principal | undefined;

export function isAdmin(caller: Caller): boolean {
  if (caller === undefined || caller.root) return true;
  return allows({ name: caller.name, grants: caller.grants }, "admin", undefined);
}

function isRoot(caller: Caller): boolean {
  return caller === undefined || caller.root;
}

const refuse = (status: Refusal["status"], code: Refusal["code"], message: string): Refusal => ({
  status,
  code,
  message,
});

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkPattern(p: unknown, what: string): string {
  if (typeof p !== "string" || p === "" || !grantPatternRe.test(p))
    throw new RangeError(`${what} must be a topic name with an optional trailing "*"`);
  return p;
}

/**
 * A request body's grants: Narad's shape `{action, patterns: [...]}` (admin
 * carries no patterns: it is global), or the users file's `{action, topics,
 * groups?}`. Throws RangeError with a message for the 400.
 */
export function parseApiGrants(raw: unknown): Grant[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new RangeError("grants must be an array");
  if (raw.length > maxGrantsPerUser) throw new RangeError(`at most ${maxGrantsPerUser} grants`);
  const out: Grant[] = [];
  raw.forEach((g: unknown, i: number) => {
    const where = `grants[${i}]`;
    if (!isObject(g)) throw new RangeError(`${where} must be an object {action, patterns}`);
    for (const k of Object.keys(g))
      if (!["action", "patterns", "topics", "groups"].includes(k))
        throw new RangeError(`${where}: unknown field "${k}"`);
    if (!isAction(g.action))
      throw new RangeError(`${where}: unknown grant action ${JSON.stringify(g.action)}`);
    const action = g.action;
    const groups = g.groups === undefined ? undefined : checkPattern(g.groups, `${where}.groups`);
    if (g.patterns !== undefined && g.topics !== undefined)
      throw new RangeError(`${where}: give patterns or topics, not both`);
    let patterns: string[];
    if (g.topics !== undefined) patterns = [checkPattern(g.topics, `${where}.topics`)];
    else if (g.patterns === undefined) patterns = [];
    else if (!Array.isArray(g.patterns)) throw new RangeError(`${where}.patterns must be an array`);
    else patterns = g.patterns.map((p: unknown, j: number) => checkPattern(p, `${where}.patterns[${j}]`));
    if (action === "admin") {
      if (g.patterns !== undefined && patterns.length > 0)
        throw new RangeError("admin grants are global and must not carry patterns");
      if (patterns.length === 0) patterns = ["*"];
    } else if (patterns.length === 0) {
      throw new RangeError(`grant "${action}" requires at least one topic pattern`);
    }
    for (const topics of patterns)
      out.push(groups === undefined ? { action, topics } : { action, topics, groups });
  });
  if (out.length > maxGrantsPerUser) throw new RangeError(`at most ${maxGrantsPerUser} grants`);
  return out;
}

/** Grants as the API shows them, Narad's shape (admin on "*" without patterns). */
export function grantsToWire(grants: readonly Grant[]): Array<Record<string, unknown>> {
  return grants.map((g) => {
    if (g.action === "admin" && g.topics === "*" && g.groups === undefined) return { action: "admin" };
    return g.groups === undefined
      ? { action: g.action, patterns: [g.topics] }
      : { action: g.action, patterns: [g.topics], groups: g.groups };
  });
}

/** Whether pattern `have` matches every name pattern `want` matches. */
export function patternCovers(have: string, want: string): boolean {
  if (have.endsWith("*")) return want.replace(/\*$/, "").startsWith(have.slice(0, -1));
  return have === want;
}

/** Whether `granted` holds at least every permission in `requested` (the no-escalation check). */
export function covers(granted: readonly Grant[], requested: readonly Grant[]): boolean {
  return requested.every((want) =>
    granted.some(
      (have) =>
        (have.action === want.action || have.action === "admin") &&
        patternCovers(have.topics, want.topics) &&
        // No groups: every group.
        patternCovers(have.groups ?? "*", want.groups ?? "*"),
    ),
  );
}

/** Narad's CanDelegate: admin is root's to confer; an admin confers any scoped grant; others only what they hold. */
export function delegationRefusal(caller: Caller, requested: readonly Grant[]): Refusal | undefined {
  if (requested.some((g) => g.action === "admin") && !isRoot(caller))
    return refuse(403, "privilege_escalation", "only the root admin may grant the admin action");
  if (isAdmin(caller)) return undefined;
  if (covers(caller?.grants ?? [], requested)) return undefined;
  return refuse(403, "privilege_escalation", "cannot grant permissions you do not hold");
}

const adminRequired = (): Refusal => refuse(403, "forbidden", "admin privileges required");

const readOnly = (name: string): Refusal =>
  refuse(
    409,
    "user_read_only",
    `user "${name}" is defined in the operator's users file, which the API cannot change; edit the file`,
  );

/** GET /v1/users, GET /v1/users/{u}: admin only (a user list is sensitive). */
export function readRefusal(caller: Caller): Refusal | undefined {
  return isAdmin(caller) ? undefined : adminRequired();
}

export function createRefusal(
  caller: Caller,
  name: unknown,
  requested: readonly Grant[],
  existing: UserSource | undefined,
): Refusal | undefined {
  if (!isAdmin(caller)) return adminRequired();
  if (typeof name !== "string" || !apiUsernamePattern.test(name))
    return refuse(400, "bad_request", `username must match ${apiUsernamePattern.source}`);
  if (reservedNames.has(name))
    return refuse(403, "forbidden", `"${name}" is reserved: the root admin comes only from the users file`);
  const escalation = delegationRefusal(caller, requested);
  if (escalation !== undefined) return escalation;
  if (existing === "file") return readOnly(name);
  if (existing === "api") return refuse(409, "user_exists", `user "${name}" already exists`);
  return undefined;
}

export function grantsRefusal(
  caller: Caller,
  target: TargetUser | undefined,
  targetName: string,
  requested: readonly Grant[],
): Refusal | undefined {
  if (!isAdmin(caller)) return adminRequired();
  if (caller !== undefined && caller.name === targetName)
    return refuse(403, "forbidden", "cannot modify your own grants");
  const escalation = delegationRefusal(caller, requested);
  if (escalation !== undefined) return escalation;
  if (target === undefined) return refuse(404, "user_not_found", `user "${targetName}" not found`);
  if (target.name === rootUser) return refuse(403, "forbidden", "the root admin's grants are immutable");
  if (target.source === "file") return readOnly(target.name);
  return undefined;
}

export function deleteRefusal(
  caller: Caller,
  target: TargetUser | undefined,
  targetName: string,
): Refusal | undefined {
  if (!isAdmin(caller)) return adminRequired();
  if (target === undefined) return refuse(404, "user_not_found", `user "${targetName}" not found`);
  if (target.name === rootUser) return refuse(403, "forbidden", "the root admin cannot be deleted");
  if (caller !== undefined && caller.name === target.name)
    return refuse(403, "forbidden", "cannot delete your own account");
  if (target.source === "file") return readOnly(target.name);
  return undefined;
}

/**
 * PUT /v1/users/{u}/password. `needsCurrent` in the answer: a non-admin
 * changing their own password must prove the current one.
 */
export function passwordRefusal(
  caller: Caller,
  target: TargetUser | undefined,
  targetName: string,
): Refusal | { needsCurrent: boolean } {
  const self = caller !== undefined && caller.name === targetName;
  if (!self && !isAdmin(caller)) return adminRequired();
  if (target === undefined) return refuse(404, "user_not_found", `user "${targetName}" not found`);
  if (target.name === rootUser && !self)
    return refuse(403, "forbidden", "only the root admin may change the root password");
  if (target.source === "file") return readOnly(target.name);
  return { needsCurrent: self && !isAdmin(caller) };
}

/** A password in a body: a non-empty string of bounded size (scrypt reads all of it). */
export function passwordProblem(value: unknown, field: string): string | undefined {
  if (typeof value !== "string" || value === "") return `${field} required`;
  if (Buffer.byteLength(value) > maxPasswordBytes) return `${field} is longer than ${maxPasswordBytes} bytes`;
  return undefined;
}

/** PATCH/DELETE /v1/topics/{t}: the topic's owner or an admin (a topic without an owner: admins only). */
export function topicManageRefusal(
  caller: Caller,
  topic: string,
  owner: string | undefined,
): Refusal | undefined {
  if (caller === undefined || caller.root) return undefined;
  if (allows({ name: caller.name, grants: caller.grants }, "admin", topic)) return undefined;
  if (owner !== undefined && owner === caller.name) return undefined;
  return refuse(403, "not_topic_owner", "only the topic owner or an admin may modify this topic");
}

type Owned = { name: string; owner?: string | undefined };

/**
 * Fan-out links (Narad v1: owner-or-admin attaches and detaches). A link
 * changes both topics: the child's schema becomes the parent's and the
 * parent's records are written into it, so attach (and create-as-child, whose
 * child the caller is creating and will own: `child` undefined) needs
 * the right to manage the parent and the child. Breaking a link grants no
 * access to anything, so detach needs either: the parent's owner drops a
 * child, the child's owner leaves a parent.
 */
export function linkManageRefusal(
  caller: Caller,
  change: "attach" | "detach",
  parent: Owned,
  child: Owned | undefined,
): Refusal | undefined {
  const onParent = topicManageRefusal(caller, parent.name, parent.owner);
  const onChild = child === undefined ? undefined : topicManageRefusal(caller, child.name, child.owner);
  if (change === "detach") return onParent === undefined || onChild === undefined ? undefined : onParent;
  return onParent ?? onChild;
}
