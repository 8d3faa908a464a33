// NaradUser decisions, pure (docs/adr/0009-naraduser.md has the rule):
//
//   - A NaradUser without the narad.dev/managed-by: api annotation is
//     CR-managed: the CR is the truth for its grants and password, and the
//     operator writes its entry into the API users Secret. It may write only
//     an entry that is its own: one it created (status.userCreatedAtMs equals
//     the entry's created_at_ms) or one whose hash its password already
//     verifies (adopting what it wrote before a lost status write). Any other
//     entry of that name was created through the API: a conflict, and the
//     API user is left untouched.
//   - A user created through the API gets a mirror NaradUser (annotated
//     managed-by: api). Grants move both ways by a 3-way merge against the
//     last synced grants (annotation narad.dev/synced-grants): whichever side
//     changed since wins; when both changed, the API wins (it holds the
//     password and is what the brokers enforce). The password stays the API's.
//   - Deleting a CR-managed NaradUser deletes its own entry; deleting a
//     mirror deletes nothing (the next mirror pass brings it back); a mirror
//     whose API user is gone is deleted.

import { userName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradUser, NaradUserGrant } from "../../../../packages/api/src/v1alpha1/types.ts";
import { type ApiUser, apiUsernamePattern } from "../../../../packages/users/src/document.ts";
import { type Grant, rootUser } from "../../../../packages/users/src/grants.ts";
import { ANNOTATION_SYNCED_GRANTS, ANNOTATION_USER_MANAGED_BY } from "../../constants.ts";

export const MANAGED_BY_API = "api";

export function isApiManaged(user: Pick<NaradUser, "metadata">): boolean {
  return user.metadata.annotations?.[ANNOTATION_USER_MANAGED_BY] === MANAGED_BY_API;
}

/** Grants in the Users API's shape, with no undefined fields (so equal lists encode equally). */
export function grantsOf(grants: readonly NaradUserGrant[] | readonly Grant[] | undefined): Grant[] {
  return (grants ?? []).map((g) =>
    g.groups === undefined
      ? { action: g.action, topics: g.topics }
      : { action: g.action, topics: g.topics, groups: g.groups },
  );
}

export const encodeGrants = (grants: readonly Grant[]): string => JSON.stringify(grantsOf(grants));

export function sameGrants(a: readonly Grant[], b: readonly Grant[]): boolean {
  return encodeGrants(a) === encodeGrants(b);
}

/** The synced-grants annotation, or undefined when absent or not a grants list. */
export function syncedGrants(user: Pick<NaradUser, "metadata">): Grant[] | undefined {
  const raw = user.metadata.annotations?.[ANNOTATION_SYNCED_GRANTS];
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    return Array.isArray(v) ? grantsOf(v as Grant[]) : undefined;
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------ CR-managed users

export type EntryPlan =
  | { kind: "create" }
  | { kind: "update"; grants: boolean; password: boolean }
  | { kind: "unchanged" }
  | { kind: "conflict"; message: string };

export interface EntryInput {
  /** The users-Secret entry of the user's name, if any. */
  existing: ApiUser | undefined;
  grants: readonly Grant[];
  /** status.userCreatedAtMs. */
  ownCreatedAtMs: number | undefined;
  /** Whether the CR's password verifies against existing.passwordHash (false when there is none). */
  passwordMatches: boolean;
}

/** Whether the entry is this NaradUser's to write (see the header). */
export function ownsEntry(
  existing: ApiUser,
  ownCreatedAtMs: number | undefined,
  passwordMatches: boolean,
): boolean {
  return (ownCreatedAtMs !== undefined && existing.created_at_ms === ownCreatedAtMs) || passwordMatches;
}

export function planEntry(i: EntryInput): EntryPlan {
  if (i.existing === undefined) return { kind: "create" };
  if (!ownsEntry(i.existing, i.ownCreatedAtMs, i.passwordMatches))
    return {
      kind: "conflict",
      message: `a user named ${i.existing.name} already exists in the Users API and was not created by this NaradUser; it is left as it is`,
    };
  const grants = !sameGrants(i.existing.grants, i.grants);
  const password = !i.passwordMatches;
  return grants || password ? { kind: "update", grants, password } : { kind: "unchanged" };
}

/** The users after `plan` (create/update only); `passwordHash` is needed when the plan writes a password. */
export function applyEntry(
  current: ReadonlyMap<string, ApiUser>,
  name: string,
  plan: Extract<EntryPlan, { kind: "create" | "update" }>,
  w: { grants: readonly Grant[]; passwordHash: string | undefined; nowMs: number },
): Map<string, ApiUser> {
  const next = new Map(current);
  const grants = grantsOf(w.grants);
  if (plan.kind === "create") {
    if (w.passwordHash === undefined) throw new Error("applyEntry: a new user needs a password hash");
    next.set(name, {
      name,
      passwordHash: w.passwordHash,
      grants,
      created_at_ms: w.nowMs,
      updated_at_ms: w.nowMs,
    });
    return next;
  }
  const existing = current.get(name);
  if (existing === undefined) throw new Error(`applyEntry: no user ${name} to update`);
  if (plan.password && w.passwordHash === undefined)
    throw new Error("applyEntry: a password change needs a hash");
  next.set(name, {
    ...existing,
    grants: plan.grants ? grants : existing.grants,
    passwordHash: plan.password && w.passwordHash !== undefined ? w.passwordHash : existing.passwordHash,
    updated_at_ms: w.nowMs,
  });
  return next;
}

/** The users without `name` when its entry is this NaradUser's own; undefined: nothing to write. */
export function removeOwnEntry(
  current: ReadonlyMap<string, ApiUser>,
  name: string,
  ownCreatedAtMs: number | undefined,
  passwordMatches: boolean,
): Map<string, ApiUser> | undefined {
  const existing = current.get(name);
  if (existing === undefined || !ownsEntry(existing, ownCreatedAtMs, passwordMatches)) return undefined;
  const next = new Map(current);
  next.delete(name);
  return next;
}

// ------------------------------------------------------------ mirrors of API users

/** Kubernetes object names (DNS-1123 subdomain), capped at the username's 64. */
const objectNamePattern = /^[a-z0-9]([-a-z0-9.]{0,62}[a-z0-9])?$/;

/** The mirror's metadata.name for an API user, or undefined when the name cannot be one (upper case, "_"). */
export function mirrorObjectName(username: string): string | undefined {
  if (username === rootUser || !apiUsernamePattern.test(username)) return undefined;
  return objectNamePattern.test(username) ? username : undefined;
}

export type MirrorSync =
  | { kind: "none" }
  /** Only the synced-grants annotation is behind (both sides already agree). */
  | { kind: "mark"; grants: Grant[] }
  /** The API changed: the CR's spec.grants (and the annotation) take the API's. */
  | { kind: "toCr"; grants: Grant[] }
  /** The CR was edited: the API user's grants (and the annotation) take the CR's. */
  | { kind: "toApi"; grants: Grant[] };

/** The 3-way merge of one mirror's grants against its API user's. */
export function planMirrorSync(cr: Pick<NaradUser, "metadata" | "spec">, entry: ApiUser): MirrorSync {
  const crGrants = grantsOf(cr.spec.grants);
  const apiGrants = grantsOf(entry.grants);
  const base = syncedGrants(cr);
  if (sameGrants(crGrants, apiGrants))
    return base !== undefined && sameGrants(base, apiGrants)
      ? { kind: "none" }
      : { kind: "mark", grants: apiGrants };
  if (base !== undefined && sameGrants(base, apiGrants) && !sameGrants(base, crGrants))
    return { kind: "toApi", grants: crGrants };
  return { kind: "toCr", grants: apiGrants };
}

export interface MirrorPlan {
  /** API users with no NaradUser: mirrors to create. */
  create: { objectName: string; username: string; grants: Grant[] }[];
  /** Mirrors whose API user is gone. */
  remove: NaradUser[];
  /** API users that cannot be mirrored, and why. */
  skipped: { username: string; why: string }[];
}

/** What the mirror pass does for one cluster: `users` from its API users Secret, `crs` its NaradUsers. */
export function planMirror(users: ReadonlyMap<string, ApiUser>, crs: readonly NaradUser[]): MirrorPlan {
  const claimed = new Set(crs.map((c) => userName(c)));
  const objectNames = new Set(crs.map((c) => c.metadata.name ?? ""));
  const plan: MirrorPlan = { create: [], remove: [], skipped: [] };
  for (const u of [...users.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (claimed.has(u.name)) continue;
    const objectName = mirrorObjectName(u.name);
    if (objectName === undefined) {
      plan.skipped.push({
        username: u.name,
        why: "not a Kubernetes object name (lower case letters, digits, - and .)",
      });
      continue;
    }
    if (objectNames.has(objectName)) {
      plan.skipped.push({ username: u.name, why: `NaradUser ${objectName} exists for another user` });
      continue;
    }
    plan.create.push({ objectName, username: u.name, grants: grantsOf(u.grants) });
  }
  for (const c of crs)
    if (isApiManaged(c) && !c.metadata.deletionTimestamp && !users.has(userName(c))) plan.remove.push(c);
  return plan;
}
