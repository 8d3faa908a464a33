// A broker's view of the API users Secret and the decisions about it, pure.
//
// Freshness. Every read of the Secret is a quorum GET (no resourceVersion),
// and every write a resourceVersion-checked patch; the store runs them one at
// a time, so each answer is at least as new as the one before it. An answer
// to a request started at time t reflects every write committed before t, so
// the view is "confirmed at t". A decision at time `now` may use the view
// only while now - confirmedAt <= the bound (--users-max-staleness-ms):
// then any change committed more than `bound` ago is in it, whichever broker
// made it. Past the bound (the API server unreachable, the Secret missing or
// unreadable) decisions about the Secret's users fail closed: 503, never an
// allow from an old view. Times are monotonic milliseconds.
//
// Writes. A change is computed on a fresh read and patched with that read's
// resourceVersion; a 409 means another broker wrote in between, so the
// change is computed again on a new read (never written over theirs).

import type { ApiUser } from "./api-users-store.ts";

export type SecretContent =
  | { kind: "present"; users: ReadonlyMap<string, ApiUser>; resourceVersion: string }
  | { kind: "missing" }
  | { kind: "invalid"; reason: string };

export interface UsersView {
  /** The last answer of the API server; undefined before the first one. */
  content: SecretContent | undefined;
  /** Start of the request whose answer is `content` (or confirmed it); -Infinity before any. */
  confirmedAtMs: number;
  /** Why the last request failed, while it is the latest word (cleared by an answer). */
  lastError: string | undefined;
}

export const initialView = (): UsersView => ({
  content: undefined,
  confirmedAtMs: Number.NEGATIVE_INFINITY,
  lastError: undefined,
});

/** An answer to a request started at startedAtMs (requests run one at a time, in order). */
export function observed(view: UsersView, content: SecretContent, startedAtMs: number): UsersView {
  return { content, confirmedAtMs: Math.max(view.confirmedAtMs, startedAtMs), lastError: undefined };
}

/** A request that got no answer: the content stays, its age keeps growing. */
export function failed(view: UsersView, error: string): UsersView {
  return { ...view, lastError: error };
}

export type Freshness =
  | { ok: true; users: ReadonlyMap<string, ApiUser>; resourceVersion: string; ageMs: number }
  | { ok: false; reason: string };

/** Whether a decision may use the view now, and if not, why (for the 503's message). */
export function freshness(view: UsersView, nowMs: number, boundMs: number, what: string): Freshness {
  const c = view.content;
  const age = nowMs - view.confirmedAtMs;
  const why = view.lastError === undefined ? "" : `: ${view.lastError}`;
  if (c === undefined) return { ok: false, reason: `${what} has not been read yet${why}` };
  if (age > boundMs)
    return {
      ok: false,
      reason: `${what} was last read ${Math.round(age)} ms ago, more than the ${boundMs} ms bound${why}`,
    };
  if (c.kind === "missing")
    return { ok: false, reason: `${what} does not exist (the operator creates it with the cluster)` };
  if (c.kind === "invalid") return { ok: false, reason: `${what} is unreadable: ${c.reason}` };
  return { ok: true, users: c.users, resourceVersion: c.resourceVersion, ageMs: age };
}

/** What a failed patch means for the write loop. */
export type WriteStep =
  | { kind: "retry" }
  | { kind: "fail"; status: 503 | 500; message: string; retryAfterSeconds?: number };

/**
 * After a patch failed with `status` (undefined: no answer) on attempt
 * `attempt` (0-based) of `maxAttempts`. Only a 409 (another writer's
 * resourceVersion) is retried, from a fresh read.
 */
export function afterPatchFailure(
  status: number | undefined,
  attempt: number,
  maxAttempts: number,
  what: string,
): WriteStep {
  if (status === 409) {
    if (attempt + 1 < maxAttempts) return { kind: "retry" };
    return {
      kind: "fail",
      status: 503,
      message: `${what}: ${maxAttempts} writes in a row lost to other brokers' changes; retry`,
      retryAfterSeconds: 1,
    };
  }
  if (status === 404)
    return {
      kind: "fail",
      status: 503,
      message: `${what} does not exist (the operator creates it with the cluster)`,
      retryAfterSeconds: 5,
    };
  if (status === 401 || status === 403)
    return {
      kind: "fail",
      status: 500,
      message: `${what}: the Kubernetes API refused the broker (its Role lacks get/patch on this Secret)`,
    };
  return {
    kind: "fail",
    status: 503,
    message: `${what}: Kubernetes API unavailable${status === undefined ? "" : ` (HTTP ${status})`}`,
    retryAfterSeconds: 2,
  };
}
