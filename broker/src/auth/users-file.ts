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
import { type Grant, isAction } from "./grants.ts";

export interface ScryptHash {
  kind: "scrypt";
  /** CPU/memory cost (a power of two), block size, parallelism. */
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
  /** The encoded form, to key the verification cache. */
  encoded: string;
}

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
const topicPatternRe = /^[A-Za-z0-9._-]*\*?$/;

export function sha256(value: string | Buffer): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * "scrypt$N$r$p$<salt base64>$<key base64>". Bounds keep a hostile file from
 * making one check cost seconds or gigabytes.
 */
export function parseScryptHash(encoded: string): ScryptHash {
  const parts = encoded.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt")
    throw new UsersFileError('passwordHash must look like "scrypt$N$r$p$<salt base64>$<key base64>"');
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!Number.isInteger(n) || n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0)
    throw new UsersFileError("passwordHash: N must be a power of two between 2 and 1048576");
  if (!Number.isInteger(r) || r < 1 || r > 32) throw new UsersFileError("passwordHash: r must be 1..32");
  if (!Number.isInteger(p) || p < 1 || p > 16) throw new UsersFileError("passwordHash: p must be 1..16");
  if (128 * n * r > 256 * 1024 * 1024) throw new UsersFileError("passwordHash: N*r needs more than 256 MiB");
  const salt = Buffer.from(parts[4] ?? "", "base64");
  const key = Buffer.from(parts[5] ?? "", "base64");
  if (salt.length < 8) throw new UsersFileError("passwordHash: salt must be at least 8 bytes");
  if (key.length < 16 || key.length > 128)
    throw new UsersFileError("passwordHash: key must be 16..128 bytes");
  return { kind: "scrypt", n, r, p, salt, key, encoded };
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

function parseGrant(raw: unknown, where: string): Grant {
  if (!isObject(raw)) fail(where, "must be an object {action, topics}");
  checkKeys(raw, ["action", "topics", "groups"], where);
  if (!isAction(raw.action)) fail(where, "action must be produce, consume, create or admin");
  const topics = raw.topics;
  if (typeof topics !== "string" || topics === "" || !topicPatternRe.test(topics))
    fail(where, 'topics must be a topic name or a prefix ending in "*"');
  if (raw.groups === undefined) return { action: raw.action, topics };
  const groups = raw.groups;
  if (typeof groups !== "string" || groups === "" || !topicPatternRe.test(groups))
    fail(where, 'groups must be a group name or a prefix ending in "*"');
  return { action: raw.action, topics, groups };
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
    const grants = rawGrants.map((g: unknown, j: number) => parseGrant(g, `${where}.grants[${j}]`));
    users.set(name, { name, password, grants });
  });
  return { users, tokens };
}
