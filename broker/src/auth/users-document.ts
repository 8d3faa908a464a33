// The API users' document as the kubernetes metastore stores it (one key of
// one Secret), pure: encode and a strict decode. Anyone who may edit the
// Secret can put anything in it, so a document is input: every field is
// checked, unknown fields are refused, and so is a plaintext "password" (the
// document holds scrypt hashes only; passwords.ts hashPassword). A document
// that fails is refused as a whole, and the store then fails closed rather
// than deciding on part of it.
//
// {"version": 1, "users": [{"name", "passwordHash": "scrypt$...", "grants": [...],
//                           "created_at_ms", "updated_at_ms"}]}

import type { ApiUser } from "./api-users-store.ts";
import { apiUsernamePattern } from "./user-rules.ts";
import { parseUsersFile, type UsersDb, UsersFileError } from "./users-file.ts";

export const usersDocumentKey = "users.json";

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

/** The users as the authenticator reads them; the users file's parser checks every hash and grant. */
export function usersDbOf(users: ReadonlyMap<string, ApiUser>): UsersDb {
  const doc = {
    users: [...users.values()].map((u) => ({ name: u.name, passwordHash: u.passwordHash, grants: u.grants })),
  };
  return parseUsersFile(JSON.stringify(doc));
}

/** Parses and checks a whole document; throws UsersDocumentError naming the first problem. */
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
    if (raw.grants !== undefined && !Array.isArray(raw.grants))
      throw new UsersDocumentError(`${where}: grants must be an array`);
    users.set(name, {
      name,
      passwordHash: raw.passwordHash,
      // Checked below, with the hash, by the users file's parser.
      grants: (raw.grants ?? []) as ApiUser["grants"],
      created_at_ms: timestamp(raw.created_at_ms, `${where}.created_at_ms`),
      updated_at_ms: timestamp(raw.updated_at_ms, `${where}.updated_at_ms`),
    });
  });
  try {
    usersDbOf(users);
  } catch (err) {
    if (err instanceof UsersFileError) throw new UsersDocumentError(err.message);
    throw err;
  }
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
