// Turns an Authorization header into a principal, or into the refusal to
// send: 401 (no or wrong credentials), 429 (throttled username), 503 (too
// many password hashes queued). The users come from a getter, so a reloaded
// file applies to the next request. The cluster shared secret is accepted as
// a bearer token of the built-in principal "narad-cluster", which may do
// everything (the operator calls /admin/v1 with it).
//
// Credentials that passed the check in the last minute are accepted before
// the throttle is consulted, and every hit extends them: someone guessing a
// user's password locks out new guesses, never the clients of that user that
// are logged in (a guesser cannot get into that set without passing the
// throttled check). The throttle is keyed by (username, client address), so
// a stranger's guesses slow down the stranger's address only.
//
// An unknown username is checked against a dummy scrypt hash with the usual
// parameters, so "no such user" costs what a real scrypt user costs and the
// answer time does not tell which names exist.

import { randomBytes, timingSafeEqual } from "node:crypto";
import { allows, type Grant, rootUser } from "../../../packages/users/src/grants.ts";
import { parseAuthorization } from "./credentials.ts";
import { BusyError, type PasswordChecker } from "./passwords.ts";
import type { LoginThrottle } from "./throttle.ts";
import { type ScryptHash, sha256, type UserRecord, type UsersDb } from "./users-file.ts";

export interface Principal {
  name: string;
  /** How it authenticated. */
  via: "basic" | "bearer" | "cluster-secret";
  /** May do everything (the user "admin", the cluster secret). */
  root: boolean;
  grants: readonly Grant[];
}

export const clusterPrincipalName = "narad-cluster";

export type AuthOutcome =
  | { ok: true; principal: Principal }
  | {
      ok: false;
      status: 401 | 429 | 503;
      /** Why, for the response body: never says whether the user exists. */
      message: string;
      /** Counted in narad_auth_failures_total. */
      reason: "missing" | "malformed" | "bad_credentials" | "throttled" | "busy" | "users_unavailable";
      /** Which limit refused it, when one did (narad_limit_refusals_total). */
      limit?: "login_throttle" | "login_throttle_table" | "hash_queue";
      retryAfterSeconds?: number;
    };

export interface AuthenticatorDeps {
  users(): UsersDb;
  /** sha256 of the cluster shared secret, if one is configured. */
  clusterSecretDigest(): Buffer | undefined;
  passwords: PasswordChecker;
  throttle: LoginThrottle;
  nowMs: () => number;
}

/** How long verified credentials skip the throttle, and how many are remembered. */
const knownGoodMs = 60_000;
const knownGoodMax = 10_000;

/**
 * Checked when the user does not exist: a random key no password can match,
 * with hashPassword's default parameters, so the check costs one real scrypt.
 */
const absentHash: ScryptHash = {
  kind: "scrypt",
  n: 16384,
  r: 8,
  p: 1,
  salt: randomBytes(16),
  key: randomBytes(32),
  encoded: `scrypt$absent$${randomBytes(8).toString("hex")}`,
};

export function principalAllows(
  p: Principal,
  action: Grant["action"],
  topic: string | undefined,
  group?: string,
): boolean {
  return p.root || allows({ name: p.name, grants: p.grants }, action, topic, group);
}

function principalOf(user: UserRecord, via: "basic" | "bearer"): Principal {
  return { name: user.name, via, root: user.name === rootUser, grants: user.grants };
}

export class Authenticator {
  readonly #d: AuthenticatorDeps;
  /** sha256(user, stored password identity, password) hex → expiry (ms); insertion order = age. */
  readonly #knownGood = new Map<string, number>();

  constructor(deps: AuthenticatorDeps) {
    this.#d = deps;
  }

  /** `client` is the peer address: the throttle's second key. */
  async authenticate(header: string | undefined, client = ""): Promise<AuthOutcome> {
    const cred = parseAuthorization(header);
    switch (cred.kind) {
      case "none":
        return { ok: false, status: 401, reason: "missing", message: "authentication required" };
      case "malformed":
        return { ok: false, status: 401, reason: "malformed", message: cred.reason };
      case "bearer":
        return this.#bearer(cred.token);
      case "basic":
        return this.#basic(cred.user, cred.password, client);
    }
  }

  #bearer(token: string): AuthOutcome {
    const digest = sha256(token);
    const cluster = this.#d.clusterSecretDigest();
    if (cluster !== undefined && timingSafeEqual(digest, cluster))
      return {
        ok: true,
        principal: { name: clusterPrincipalName, via: "cluster-secret", root: true, grants: [] },
      };
    const db = this.#d.users();
    const name = db.tokens.get(digest.toString("hex"));
    const user = name === undefined ? undefined : db.users.get(name);
    if (user === undefined)
      return { ok: false, status: 401, reason: "bad_credentials", message: "invalid bearer token" };
    return { ok: true, principal: principalOf(user, "bearer") };
  }

  async #basic(userName: string, password: string, client: string): Promise<AuthOutcome> {
    const now = this.#d.nowMs();
    const db = this.#d.users();
    const user = db.users.get(userName);
    // Not in the users we can decide on, and some users could not be read
    // fresh enough (users-view.ts): fail closed, never decide on an old view.
    if (user === undefined && db.unavailable !== undefined)
      return {
        ok: false,
        status: 503,
        reason: "users_unavailable",
        message: `cannot check this user now: ${db.unavailable}`,
        retryAfterSeconds: 2,
      };
    let knownKey: string | undefined;
    if (user?.password !== undefined) {
      // Keyed by the stored password too, so a password changed in a reloaded file misses.
      const id =
        user.password.kind === "plain" ? user.password.digest.toString("hex") : user.password.encoded;
      knownKey = sha256(`${userName}\0${id}\0${password}`).toString("hex");
      const expiry = this.#knownGood.get(knownKey);
      if (expiry !== undefined && expiry > now) {
        // Sliding: a client that keeps using its credentials never falls back to the throttle.
        this.#remember(knownKey, now);
        return { ok: true, principal: principalOf(user, "basic") };
      }
    }
    // NUL cannot occur in a username (Basic splits at ":"; the users file forbids it).
    const throttleKey = `${userName}\0${client}`;
    const gate = this.#d.throttle.begin(throttleKey, now, client);
    if (!gate.allowed) {
      const retryAfterSeconds = Math.max(1, Math.ceil(gate.retryAfterMs / 1000));
      return {
        ok: false,
        status: 429,
        reason: "throttled",
        limit: gate.reason === "table_full" ? "login_throttle_table" : "login_throttle",
        message: `too many failed logins for "${userName}" from this address; retry in ${retryAfterSeconds} s`,
        retryAfterSeconds,
      };
    }
    let ok: boolean;
    try {
      ok =
        user?.password === undefined
          ? (await this.#d.passwords.verify(absentHash, password)) && false
          : await this.#d.passwords.verify(user.password, password);
    } catch (err) {
      if (err instanceof BusyError) {
        // No password was checked: the attempt does not count against the user.
        this.#d.throttle.refund(throttleKey);
        return {
          ok: false,
          status: 503,
          reason: "busy",
          limit: "hash_queue",
          message: err.message,
          retryAfterSeconds: 1,
        };
      }
      throw err;
    }
    if (!ok || user === undefined || knownKey === undefined) {
      // Already counted by begin().
      return { ok: false, status: 401, reason: "bad_credentials", message: "invalid username or password" };
    }
    this.#d.throttle.succeeded(throttleKey);
    this.#remember(knownKey, this.#d.nowMs());
    return { ok: true, principal: principalOf(user, "basic") };
  }

  #remember(knownKey: string, now: number): void {
    this.#knownGood.delete(knownKey);
    this.#knownGood.set(knownKey, now + knownGoodMs);
    if (this.#knownGood.size > knownGoodMax) {
      const oldest = this.#knownGood.keys().next().value;
      if (oldest !== undefined) this.#knownGood.delete(oldest);
    }
  }
}
