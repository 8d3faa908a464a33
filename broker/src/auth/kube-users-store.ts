// The API users' store on the kubernetes metastore: one Secret per cluster,
// `<cluster>-api-users` (resourceNames().apiUsers), key users.json holding
// the users document (users-document.ts: scrypt hashes and grants, never a
// plaintext password). The operator creates it, empty, owned by the
// NaradCluster (garbage-collected with it); brokers only GET and PATCH that
// one name, so their Role grants exactly those two verbs on it.
//
//   - A poller GETs the Secret every pollMs (a quorum read); a write is a
//     GET, the change computed on it, and a merge patch carrying the read's
//     metadata.resourceVersion, which the API server applies only if the
//     Secret still has it (409 otherwise: computed again on a fresh read).
//     Reads and writes run one at a time through a queue, so each answer is
//     at least as new as the previous one (users-view.ts on why that gives a
//     freshness bound without comparing resourceVersions).
//   - Decisions use the view only within maxStalenessMs of the request
//     that confirmed it; past that, list/get/db throw 503 users_unavailable
//     and the authenticator answers 503 for users not in the users file.
//   - Opening never waits for the API server: until the first answer every
//     decision about API users is a 503, and the broker serves the rest.

import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderMiddleware,
  setHeaderOptions,
  type V1Secret,
} from "@kubernetes/client-node";
import { coded, NaradError } from "../errors.ts";
import { apiStatus } from "../meta/kube/api.ts";
import type { ApiUser, ApiUsersStore } from "./api-users-store.ts";
import { decodeUsersDocument, encodeUsersDocument, usersDbOf, usersDocumentKey } from "./users-document.ts";
import type { UsersDb } from "./users-file.ts";
import {
  afterPatchFailure,
  failed,
  freshness,
  initialView,
  observed,
  type SecretContent,
  type UsersView,
} from "./users-view.ts";

/** A Secret holds at most 1 MiB; refuse a document well below it with a clear error instead of the API server's. */
export const maxUsersDocumentBytes = 900 * 1024;

export interface KubeUsersStoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The Secret's name (resourceNames(cluster).apiUsers). */
  name: string;
  /** The freshness bound (--users-max-staleness-ms). */
  maxStalenessMs: number;
  /** How often the Secret is read; a few reads fit in the bound. */
  pollMs: number;
  requestTimeoutMs: number;
  /** Monotonic clock (ms). */
  monoMs: () => number;
  logger: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Attempts of one change against other brokers' writes. */
  maxWriteAttempts?: number;
  /** Changes waiting for the queue beyond this are refused (503) instead of piling up behind a hung API server. */
  maxQueued?: number;
}

export interface KubeUsersStore extends ApiUsersStore {
  /** The view's age now (ms), for tests and logs; Infinity before the first read. */
  ageMs(): number;
}

function contentOf(secret: V1Secret): SecretContent {
  const raw = secret.data?.[usersDocumentKey];
  const rv = secret.metadata?.resourceVersion ?? "";
  // An empty Secret (no key yet) holds no users.
  if (raw === undefined) return { kind: "present", users: new Map(), resourceVersion: rv };
  try {
    const users = decodeUsersDocument(Buffer.from(raw, "base64").toString("utf8"));
    return { kind: "present", users, resourceVersion: rv };
  } catch (err) {
    return { kind: "invalid", reason: (err as Error).message };
  }
}

const sortByName = (users: ReadonlyMap<string, ApiUser>): ApiUser[] =>
  [...users.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

export function openKubeUsersStore(o: KubeUsersStoreOptions): KubeUsersStore {
  const core = o.kubeConfig.makeApiClient(CoreV1Api);
  const what = `the API users Secret ${o.namespace}/${o.name}`;
  const maxAttempts = o.maxWriteAttempts ?? 10;
  const maxQueued = o.maxQueued ?? 64;
  // Every request gets its own deadline (as meta/kube/api.ts; client-node's
  // Observable middleware type is not exported: wrap the header one).
  const passthrough = setHeaderMiddleware("Accept", "application/json");
  const deadline: ReturnType<typeof setHeaderMiddleware> = {
    pre: (ctx) => {
      ctx.setSignal(AbortSignal.timeout(o.requestTimeoutMs));
      return passthrough.pre(ctx);
    },
    post: (response) => passthrough.post(response),
  };
  const opts = () => ({ middleware: [deadline], middlewareMergeStrategy: "append" as const });

  let view: UsersView = initialView();
  // Derived from the view's users, rebuilt only when they change.
  let derivedFrom: ReadonlyMap<string, ApiUser> | undefined;
  let db: UsersDb = { users: new Map(), tokens: new Map() };
  let sorted: ApiUser[] = [];
  let loggedState = "";

  const setView = (next: UsersView): void => {
    view = next;
    const c = next.content;
    if (c?.kind === "present" && c.users !== derivedFrom) {
      derivedFrom = c.users;
      db = usersDbOf(c.users);
      sorted = sortByName(c.users);
    }
    // One log line per change of state, not per poll.
    const state = c === undefined ? "unread" : c.kind === "invalid" ? `invalid: ${c.reason}` : c.kind;
    const key = `${state}|${next.lastError === undefined ? "" : "error"}`;
    if (key !== loggedState) {
      if (c?.kind === "present" && next.lastError === undefined)
        o.logger.info({ secret: o.name, users: c.users.size }, "API users Secret read");
      else o.logger.warn({ secret: o.name, state, error: next.lastError }, "API users Secret not usable");
      loggedState = key;
    }
  };

  // One request at a time (see the header); `pending` counts what waits.
  let queue: Promise<unknown> = Promise.resolve();
  let pending = 0;
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    pending++;
    const run = queue.then(work).finally(() => pending--);
    queue = run.catch(() => undefined);
    return run;
  };

  /** A quorum GET; updates the view either way. Returns the content, or throws the request's error. */
  const read = async (): Promise<SecretContent> => {
    const started = o.monoMs();
    let content: SecretContent;
    try {
      content = contentOf(await core.readNamespacedSecret({ namespace: o.namespace, name: o.name }, opts()));
    } catch (err) {
      if (apiStatus(err) === 404) content = { kind: "missing" };
      else {
        setView(failed(view, describe(err)));
        throw err;
      }
    }
    setView(observed(view, content, started));
    return content;
  };

  const stale = (): string | undefined => {
    const f = freshness(view, o.monoMs(), o.maxStalenessMs, what);
    return f.ok ? undefined : f.reason;
  };
  const fresh = (): void => {
    const why = stale();
    if (why !== undefined) throw coded("UNAVAILABLE", "users_unavailable", why, { retryAfterSeconds: 2 });
  };

  let closed = false;
  let polling = false;
  const poll = (): void => {
    // A poll still queued (API server slow) is enough: never stack them.
    if (closed || polling) return;
    polling = true;
    void serial(read)
      .catch(() => undefined)
      .finally(() => {
        polling = false;
      });
  };
  poll();
  const timer = setInterval(poll, o.pollMs);
  timer.unref();

  return {
    list: () => {
      fresh();
      return sorted;
    },
    get: (name) => {
      fresh();
      return derivedFrom?.get(name);
    },
    db: () => {
      fresh();
      return db;
    },
    staleness: stale,
    ageMs: () => o.monoMs() - view.confirmedAtMs,
    change<T>(fn: (current: ReadonlyMap<string, ApiUser>) => { next: Map<string, ApiUser>; result: T }) {
      if (closed) return Promise.reject(new NaradError("UNAVAILABLE", `${what}: the store is closed`));
      if (pending >= maxQueued)
        return Promise.reject(
          coded("UNAVAILABLE", "users_unavailable", `${what}: too many changes waiting; retry`, {
            retryAfterSeconds: 1,
          }),
        );
      return serial(async () => {
        for (let attempt = 0; ; attempt++) {
          let content: SecretContent;
          try {
            content = await read();
          } catch (err) {
            const step = afterPatchFailure(apiStatus(err), maxAttempts, maxAttempts, what);
            throw failure(step, err);
          }
          if (content.kind !== "present") {
            const f = freshness(view, o.monoMs(), o.maxStalenessMs, what);
            throw coded("UNAVAILABLE", "users_unavailable", f.ok ? what : f.reason, { retryAfterSeconds: 5 });
          }
          // May throw (404, 409 of the route's own rules): nothing is written.
          const { next, result } = fn(content.users);
          const text = encodeUsersDocument(next);
          // Checked like a loaded document, so a change never writes one the next read would refuse.
          usersDbOf(next);
          if (text.length > maxUsersDocumentBytes)
            throw new NaradError(
              "CONFLICT",
              `the API users would exceed ${maxUsersDocumentBytes} bytes (a Secret holds 1 MiB); delete users first`,
            );
          const started = o.monoMs();
          try {
            const secret = await core.patchNamespacedSecret(
              {
                namespace: o.namespace,
                name: o.name,
                body: {
                  metadata: { resourceVersion: content.resourceVersion },
                  data: { [usersDocumentKey]: Buffer.from(text, "utf8").toString("base64") },
                },
              },
              setHeaderOptions("Content-Type", PatchStrategy.MergePatch, opts()),
            );
            setView(observed(view, contentOf(secret), started));
            return result;
          } catch (err) {
            const step = afterPatchFailure(apiStatus(err), attempt, maxAttempts, what);
            if (step.kind === "retry") {
              // Another broker wrote first: a short random pause spreads the next attempts.
              await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
              continue;
            }
            if (apiStatus(err) === undefined) setView(failed(view, describe(err)));
            throw failure(step, err);
          }
        }
      });
    },
    close: async () => {
      closed = true;
      clearInterval(timer);
      await queue;
    },
  };
}

function describe(err: unknown): string {
  const status = apiStatus(err);
  const msg = err instanceof Error ? err.message.split("\n")[0] : String(err);
  return status === undefined ? (msg ?? "no answer") : `HTTP ${status}`;
}

function failure(step: ReturnType<typeof afterPatchFailure>, cause: unknown): NaradError {
  if (step.kind === "retry") return new NaradError("INTERNAL", "unexpected retry", { cause });
  if (step.status === 500) return new NaradError("INTERNAL", step.message, { cause });
  return coded("UNAVAILABLE", "users_unavailable", step.message, {
    ...(step.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: step.retryAfterSeconds }),
    cause,
  });
}
