// Turns an Authorization header into a principal, or into the refusal to
// send: 401 (no or wrong credentials), 429 (throttled username), 503 (too
// many password hashes queued). The users come from a getter, so a reloaded
// file applies to the next request. The cluster shared secret is accepted as
// a bearer token of the built-in principal "narad-cluster", which may do
// everything (the operator calls /admin/v1 with it).
//
// Credentials that passed the check in the last minute are accepted before
// the throttle is consulted: someone guessing a user's password locks out
// new guesses, not the clients of that user that already logged in (a
// guesser cannot get into that set without passing the throttled check).

import { timingSafeEqual } from "node:crypto";
import { parseAuthorization } from "./credentials.ts";
import { allows, type Grant, rootUser } from "./grants.ts";
import { BusyError, type PasswordChecker } from "./passwords.ts";
import type { LoginThrottle } from "./throttle.ts";
import { sha256, type UserRecord, type UsersDb } from "./users-file.ts";

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
      reason: "missing" | "malformed" | "bad_credentials" | "throttled" | "busy";
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

/** Compared against when the user does not exist, so both paths cost the same. */
const absentDigest = sha256("narad: no such user");

export function principalAllows(p: Principal, action: Grant["action"], topic: string | undefined): boolean {
  return p.root || allows({ name: p.name, grants: p.grants }, action, topic);
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

  async authenticate(header: string | undefined): Promise<AuthOutcome> {
    const cred = parseAuthorization(header);
    switch (cred.kind) {
      case "none":
        return { ok: false, status: 401, reason: "missing", message: "authentication required" };
      case "malformed":
        return { ok: false, status: 401, reason: "malformed", message: cred.reason };
      case "bearer":
        return this.#bearer(cred.token);
      case "basic":
        return this.#basic(cred.user, cred.password);
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

  async #basic(userName: string, password: string): Promise<AuthOutcome> {
    const now = this.#d.nowMs();
    const user = this.#d.users().users.get(userName);
    let knownKey: string | undefined;
    if (user?.password !== undefined) {
      // Keyed by the stored password too, so a password changed in a reloaded file misses.
      const id =
        user.password.kind === "plain" ? user.password.digest.toString("hex") : user.password.encoded;
      knownKey = sha256(`${userName}\0${id}\0${password}`).toString("hex");
      const expiry = this.#knownGood.get(knownKey);
      if (expiry !== undefined && expiry > now) return { ok: true, principal: principalOf(user, "basic") };
    }
    const gate = this.#d.throttle.begin(userName, now);
    if (!gate.allowed) {
      const retryAfterSeconds = Math.max(1, Math.ceil(gate.retryAfterMs / 1000));
      return {
        ok: false,
        status: 429,
        reason: "throttled",
        message: `too many failed logins for "${userName}"; retry in ${retryAfterSeconds} s`,
        retryAfterSeconds,
      };
    }
    let ok: boolean;
    try {
      ok =
        user?.password === undefined
          ? (await this.#d.passwords.verify({ kind: "plain", digest: absentDigest }, password)) && false
          : await this.#d.passwords.verify(user.password, password);
    } catch (err) {
      if (err instanceof BusyError)
        return { ok: false, status: 503, reason: "busy", message: err.message, retryAfterSeconds: 1 };
      throw err;
    }
    if (!ok || user === undefined || knownKey === undefined) {
      this.#d.throttle.failed(userName, this.#d.nowMs());
      return { ok: false, status: 401, reason: "bad_credentials", message: "invalid username or password" };
    }
    this.#d.throttle.succeeded(userName);
    this.#knownGood.delete(knownKey);
    this.#knownGood.set(knownKey, this.#d.nowMs() + knownGoodMs);
    if (this.#knownGood.size > knownGoodMax) {
      const oldest = this.#knownGood.keys().next().value;
      if (oldest !== undefined) this.#knownGood.delete(oldest);
    }
    return { ok: true, principal: principalOf(user, "basic") };
  }
}
