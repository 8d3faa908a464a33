// The scrypt password-hash format the broker verifies and both the broker
// (POST /v1/users, /password) and the operator (NaradUser) write:
// "scrypt$N$r$p$<salt base64>$<key base64>". One module, so a hash the
// operator writes is one the broker accepts by construction.

import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

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

export class PasswordHashError extends Error {}

/** Parses the format. Bounds keep a hostile document from making one check cost seconds or gigabytes. */
export function parseScryptHash(encoded: string): ScryptHash {
  const parts = encoded.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt")
    throw new PasswordHashError('passwordHash must look like "scrypt$N$r$p$<salt base64>$<key base64>"');
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!Number.isInteger(n) || n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0)
    throw new PasswordHashError("passwordHash: N must be a power of two between 2 and 1048576");
  if (!Number.isInteger(r) || r < 1 || r > 32) throw new PasswordHashError("passwordHash: r must be 1..32");
  if (!Number.isInteger(p) || p < 1 || p > 16) throw new PasswordHashError("passwordHash: p must be 1..16");
  if (128 * n * r > 256 * 1024 * 1024)
    throw new PasswordHashError("passwordHash: N*r needs more than 256 MiB");
  const salt = Buffer.from(parts[4] ?? "", "base64");
  const key = Buffer.from(parts[5] ?? "", "base64");
  if (salt.length < 8) throw new PasswordHashError("passwordHash: salt must be at least 8 bytes");
  if (key.length < 16 || key.length > 128)
    throw new PasswordHashError("passwordHash: key must be 16..128 bytes");
  return { kind: "scrypt", n, r, p, salt, key, encoded };
}

/** The derived key of `password` under the hash's parameters and salt. */
export function scryptKey(
  password: string,
  h: Pick<ScryptHash, "n" | "r" | "p" | "salt" | "key">,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password,
      h.salt,
      h.key.length,
      { N: h.n, r: h.r, p: h.p, maxmem: 300 * 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/** "scrypt$N$r$p$salt$key" for `password`. */
export async function hashPassword(password: string, n = 16384, r = 8, p = 1): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptKey(password, { n, r, p, salt, key: Buffer.alloc(32) });
  return `scrypt$${n}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

/** Whether `password` matches `encoded` (false, not a throw, for a malformed hash). */
export async function passwordMatches(encoded: string, password: string): Promise<boolean> {
  let h: ScryptHash;
  try {
    h = parseScryptHash(encoded);
  } catch {
    return false;
  }
  const key = await scryptKey(password, h);
  return key.length === h.key.length && timingSafeEqual(key, h.key);
}
