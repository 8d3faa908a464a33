// The users file, parsed and validated (pure apart from hashing): a bad file
// is rejected as a whole with a message naming the first problem, so the
// caller can keep the last good one. Passwords are kept only as a SHA-256
// digest (plaintext entries) or as the scrypt parameters (hashed entries);
// bearer tokens are indexed by their SHA-256 digest, so a lookup compares
// digests, never the secret itself.
//
// {"users":[{"name":"admin","password":"..."|"passwordHash":"scrypt$...",
//            "tokens":["..."],"grants":[{"action":"produce","topics":"orders-*"}]}]}

import { createHash } from "node:crypto";
import { type Grant, GrantError, parseGrant } from "../../../packages/users/src/grants.ts";
import {
  PasswordHashError,
  parseScryptHash as parseScryptHashFormat,
  type ScryptHash,
} from "../../../packages/users/src/scrypt.ts";

export type { ScryptHash };

export type StoredPassword = { kind: "plain"; digest: Buffer } | ScryptHash;

export interface UserRecord {
  name: string;
  password: StoredPassword | undefined;
  grants: readonly Grant[];
}

export interface UsersDb {
  users: ReadonlyMap<string, UserRecord>;
  /** sha256(token) hex → user name. */
  tokens: ReadonlyMap<string, string>;
  /**
   * Set when some users could not be included (the API users' shared store
   * is past its freshness bound): a name not found here is then undecidable,
   * not unknown. Why, for the 503's message.
   */
  unavailable?: string;
}

export class UsersFileError extends Error {}

/** Names go in Basic credentials (user:password), so no colon; printable and short. */
const namePattern = /^[A-Za-z0-9._@-]{1,128}$/;
const minTokenLength = 16;

export function sha256(value: string | Buffer): Buffer {
  return createHash("sha256").update(value).digest();
}

/** The scrypt format's parser (packages/users), failing as the users file does. */
export function parseScryptHash(encoded: string): ScryptHash {
  try {
    return parseScryptHashFormat(encoded);
  } catch (err) {
    if (err instanceof PasswordHashError) throw new UsersFileError(err.message);
    throw err;
  }
}

function fail(where: string, what: string): never {
  throw new UsersFileError(`${where}: ${what}`);
}

function checkKeys(obj: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) fail(where, `unknown field "${key}"`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseGrantAt(raw: unknown, where: string): Grant {
  try {
    return parseGrant(raw);
  } catch (err) {
    if (err instanceof GrantError) fail(where, err.message);
    throw err;
  }
}

export function parseUsersFile(text: string): UsersDb {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UsersFileError(`not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc)) fail("users file", 'must be an object {"users": [...]}');
  checkKeys(doc, ["users"], "users file");
  if (!Array.isArray(doc.users)) fail("users file", '"users" must be an array');
  const users = new Map<string, UserRecord>();
  const tokens = new Map<string, string>();
  doc.users.forEach((raw: unknown, i: number) => {
    const where = `users[${i}]`;
    if (!isObject(raw)) fail(where, "must be an object");
    checkKeys(raw, ["name", "password", "passwordHash", "tokens", "grants"], where);
    const name = raw.name;
    if (typeof name !== "string" || !namePattern.test(name))
      fail(where, "name must be 1-128 characters of A-Z a-z 0-9 . _ @ -");
    if (users.has(name)) fail(where, `duplicate user "${name}"`);
    if (raw.password !== undefined && raw.passwordHash !== undefined)
      fail(where, "give password or passwordHash, not both");
    let password: StoredPassword | undefined;
    if (raw.password !== undefined) {
      if (typeof raw.password !== "string" || raw.password === "")
        fail(where, "password must be a non-empty string");
      password = { kind: "plain", digest: sha256(raw.password) };
    } else if (raw.passwordHash !== undefined) {
      if (typeof raw.passwordHash !== "string") fail(where, "passwordHash must be a string");
      try {
        password = parseScryptHash(raw.passwordHash);
      } catch (err) {
        fail(where, (err as Error).message);
      }
    }
    const rawTokens = raw.tokens ?? [];
    if (!Array.isArray(rawTokens)) fail(where, "tokens must be an array of strings");
    for (const t of rawTokens) {
      if (typeof t !== "string" || t.length < minTokenLength || /\s/.test(t))
        fail(where, `tokens must be strings of at least ${minTokenLength} characters without spaces`);
      const key = sha256(t).toString("hex");
      if (tokens.has(key)) fail(where, "a token is listed twice");
      tokens.set(key, name);
    }
    if (password === undefined && rawTokens.length === 0)
      fail(where, "needs a password, a passwordHash or tokens");
    const rawGrants = raw.grants ?? [];
    if (!Array.isArray(rawGrants)) fail(where, "grants must be an array");
    const grants = rawGrants.map((g: unknown, j: number) => parseGrantAt(g, `${where}.grants[${j}]`));
    users.set(name, { name, password, grants });
  });
  return { users, tokens };
}
