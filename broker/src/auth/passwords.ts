// Password checks, bounded in CPU: plaintext entries compare SHA-256
// digests with timingSafeEqual; scrypt entries run at most `concurrency`
// hashes at once (the rest queue, and past `maxQueued` the login is refused
// as busy), and a successful verification is remembered for `cacheMs`, so a
// client sending Basic credentials on every request pays the hash once a
// minute, not per request. The cache key is a digest of hash + password, so
// a changed hash in a reloaded file misses it. Identical checks already
// running share one hash (a burst of connections with the same credentials
// at startup costs one scrypt, not one each).

import { timingSafeEqual } from "node:crypto";
import { hashPassword, type ScryptHash, scryptKey } from "../../../packages/users/src/scrypt.ts";
import { type StoredPassword, sha256 } from "./users-file.ts";

export interface PasswordCheckerOptions {
  concurrency: number;
  maxQueued: number;
  cacheMs: number;
  cacheEntries: number;
  nowMs: () => number;
}

export class BusyError extends Error {}

export { hashPassword };

export class PasswordChecker {
  readonly #o: PasswordCheckerOptions;
  #running = 0;
  readonly #queue: Array<() => void> = [];
  /** digest(hash, password) hex → expiry (ms); insertion order = age. */
  readonly #verified = new Map<string, number>();
  readonly #inFlight = new Map<string, Promise<boolean>>();

  constructor(options: PasswordCheckerOptions) {
    this.#o = options;
  }

  async verify(stored: StoredPassword, password: string): Promise<boolean> {
    if (stored.kind === "plain") return timingSafeEqual(sha256(password), stored.digest);
    const cacheKey = sha256(`${stored.encoded}\0${password}`).toString("hex");
    const expiry = this.#verified.get(cacheKey);
    if (expiry !== undefined && expiry > this.#o.nowMs()) return true;
    const running = this.#inFlight.get(cacheKey);
    if (running !== undefined) return running;
    const check = this.#check(stored, password, cacheKey).finally(() => this.#inFlight.delete(cacheKey));
    this.#inFlight.set(cacheKey, check);
    return check;
  }

  async #check(stored: ScryptHash, password: string, cacheKey: string): Promise<boolean> {
    const key = await this.#limited(() => scryptKey(password, stored));
    const ok = key.length === stored.key.length && timingSafeEqual(key, stored.key);
    if (ok) {
      this.#verified.delete(cacheKey);
      this.#verified.set(cacheKey, this.#o.nowMs() + this.#o.cacheMs);
      if (this.#verified.size > this.#o.cacheEntries) {
        const oldest = this.#verified.keys().next().value;
        if (oldest !== undefined) this.#verified.delete(oldest);
      }
    }
    return ok;
  }

  async #limited<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#o.concurrency) {
      if (this.#queue.length >= this.#o.maxQueued)
        throw new BusyError("too many password checks in progress");
      await new Promise<void>((resolve) => this.#queue.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await work();
    } finally {
      // Hand the slot to the next waiter, or free it.
      const next = this.#queue.shift();
      if (next !== undefined) next();
      else this.#running--;
    }
  }
}
