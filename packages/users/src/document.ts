// The API users' document as the kubernetes metastore stores it (key
// users.json of the Secret `<cluster>-api-users`), pure: encode and a strict
// decode, shared by the broker (which serves the users API from it) and the
// operator (which writes NaradUsers into it). Anyone who may edit the
// Secret can put anything in it, so a document is input: every field is
// checked, unknown fields are refused, and so is a plaintext "password" (the
// document holds scrypt hashes only). A document that fails is refused as a
// whole: a reader then fails closed, a writer writes nothing.
//
// {"version": 1, "users": [{"name", "passwordHash": "scrypt$...", "grants": [...],
//                           "created_at_ms", "updated_at_ms"}]}

import { type Grant, GrantError, parseGrant } from "./grants.ts";
import { PasswordHashError, parseScryptHash } from "./scrypt.ts";

export const usersDocumentKey = "users.json";

/** Names go in Basic credentials (user:password) and URLs: no colon, no slash. */
export const apiUsernamePattern = /^[A-Za-z0-9._-]{1,64}$/;

export interface ApiUser {
  name: string;
  /** "scrypt$..." (scrypt.ts hashPassword); never leaves the broker's API. */
  passwordHash: string;
  grants: Grant[];
  created_at_ms: number;
  updated_at_ms: number;
}

export class UsersDocumentError extends Error {}

const userFields = ["name", "passwordHash", "grants", "created_at_ms", "updated_at_ms"] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function timestamp(v: unknown, where: string): number {
  if (v === undefined) return 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
    throw new UsersDocumentError(`${where}: must be a non-negative integer (ms)`);
  return v;
}

/** Parses and checks a whole document (fields, names, hash format, grants); throws UsersDocumentError naming the first problem. */
export function decodeUsersDocument(text: string): Map<string, ApiUser> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UsersDocumentError(`not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc) || doc.version !== 1 || !Array.isArray(doc.users))
    throw new UsersDocumentError('must be {"version": 1, "users": [...]}');
  for (const k of Object.keys(doc))
    if (k !== "version" && k !== "users") throw new UsersDocumentError(`unknown field "${k}"`);
  const users = new Map<string, ApiUser>();
  doc.users.forEach((raw: unknown, i: number) => {
    const where = `users[${i}]`;
    if (!isObject(raw)) throw new UsersDocumentError(`${where}: must be an object`);
    if ("password" in raw)
      throw new UsersDocumentError(`${where}: a plaintext "password" is never stored; use passwordHash`);
    for (const k of Object.keys(raw))
      if (!(userFields as readonly string[]).includes(k))
        throw new UsersDocumentError(`${where}: unknown field "${k}"`);
    const name = raw.name;
    if (typeof name !== "string" || !apiUsernamePattern.test(name))
      throw new UsersDocumentError(`${where}: name must match ${apiUsernamePattern.source}`);
    if (users.has(name)) throw new UsersDocumentError(`${where}: duplicate user "${name}"`);
    if (typeof raw.passwordHash !== "string")
      throw new UsersDocumentError(`${where}: passwordHash must be a string`);
    try {
      parseScryptHash(raw.passwordHash);
    } catch (err) {
      if (err instanceof PasswordHashError) throw new UsersDocumentError(`${where}: ${err.message}`);
      throw err;
    }
    if (raw.grants !== undefined && !Array.isArray(raw.grants))
      throw new UsersDocumentError(`${where}: grants must be an array`);
    const grants = (raw.grants ?? []).map((g: unknown, j: number) => {
      try {
        return parseGrant(g);
      } catch (err) {
        if (err instanceof GrantError) throw new UsersDocumentError(`${where}.grants[${j}]: ${err.message}`);
        throw err;
      }
    });
    users.set(name, {
      name,
      passwordHash: raw.passwordHash,
      grants,
      created_at_ms: timestamp(raw.created_at_ms, `${where}.created_at_ms`),
      updated_at_ms: timestamp(raw.updated_at_ms, `${where}.updated_at_ms`),
    });
  });
  return users;
}

/** Canonical text: users sorted by name, fields in a fixed order (equal sets encode equally). */
export function encodeUsersDocument(users: ReadonlyMap<string, ApiUser>): string {
  const sorted = [...users.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((u) => ({
      name: u.name,
      passwordHash: u.passwordHash,
      grants: u.grants,
      created_at_ms: u.created_at_ms,
      updated_at_ms: u.updated_at_ms,
    }));
  return JSON.stringify({ version: 1, users: sorted });
}

export const emptyUsersDocument = (): string => encodeUsersDocument(new Map());
