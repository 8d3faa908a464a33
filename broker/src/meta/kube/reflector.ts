// A list+watch replica of one collection of Kubernetes objects, written for
// the metastore instead of client-node's makeInformer because the metastore
// must know exactly how fresh its replica is (caughtUp), and makeInformer
// stops on any error other than 410.
//
// Loop: list (when there is no resourceVersion to resume from) -> watch from
// the list's resourceVersion with bookmarks and a server-side timeout ->
// on a clean end resume from the last resourceVersion; on 410 Gone relist; on
// any other error back off (capped exponential) and retry. A periodic resync
// forces a relist, which replaces the cache and catches anything missed.

import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { Watch } from "@kubernetes/client-node";

export interface ReflectorTiming {
  /** Server-side watch timeout; the watch is then resumed from its resourceVersion. */
  watchTimeoutSeconds: number;
  restartBaseMs: number;
  restartMaxMs: number;
  /** Full relist interval. */
  resyncIntervalMs: number;
  /**
   * caughtUp() turns false when nothing (list, watch open, event, bookmark)
   * was heard for this long, whether or not a watch looks open.
   */
  maxSilenceMs: number;
}

export interface ListResult<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

export interface ReflectorLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ReflectorOptions<T extends KubernetesObject> {
  name: string;
  kubeConfig: KubeConfig;
  /** Collection path, e.g. /apis/narad.dev/v1alpha1/namespaces/ns/naradtopics. */
  path: string;
  fieldSelector?: string;
  /** A quorum LIST of the same collection (no resourceVersion). */
  list: () => Promise<ListResult<T>>;
  /** Called after the cache changed (one event, or a relist with differences). */
  onChange: () => void;
  timing: ReflectorTiming;
  logger: ReflectorLogger;
  nowMs?: () => number;
}

interface WatchStatus {
  code?: number;
  message?: string;
}

class WatchEndedError extends Error {
  readonly statusCode: number | undefined;
  constructor(message: string, statusCode: number | undefined) {
    super(message);
    this.statusCode = statusCode;
  }
}

function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { statusCode?: unknown; code?: unknown };
  if (typeof e.statusCode === "number") return e.statusCode;
  if (typeof e.code === "number") return e.code;
  return undefined;
}

function isTimeout(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "TimeoutError";
}

export class Reflector<T extends KubernetesObject> {
  readonly #o: ReflectorOptions<T>;
  readonly #now: () => number;
  readonly #watch: Watch;
  #items = new Map<string, T>();
  #resourceVersion = "";
  #synced = false;
  #watching = false;
  /** The last list or watch attempt did not fail (cleared by a failure, set by a list or an open watch). */
  #healthy = false;
  #lastContactMs = 0;
  #stopped = true;
  #failures = 0;
  #lastError: unknown;
  #abort: AbortController | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #resyncTimer: NodeJS.Timeout | undefined;
  #syncWaiters: Array<() => void> = [];

  constructor(opts: ReflectorOptions<T>) {
    this.#o = opts;
    this.#now = opts.nowMs ?? Date.now;
    this.#watch = new Watch(opts.kubeConfig);
  }

  get name(): string {
    return this.#o.name;
  }

  /** A list has succeeded at least once. */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * Synced, not retrying after a failure, and the server was heard from
   * recently. The moment between one watch ending (its server-side timeout,
   * every watchTimeoutSeconds) and the next one opening still counts: the
   * replica resumes from its resourceVersion and misses nothing, and a write
   * refused in that gap would be a spurious 503 (the clean-clone CI run hit
   * one: "create topic: Kubernetes API unreachable" with no error behind it).
   */
  caughtUp(): boolean {
    return this.#synced && this.#healthy && this.#now() - this.#lastContactMs <= this.#o.timing.maxSilenceMs;
  }

  /** A watch is open right now (false between two watches and while retrying). */
  get watching(): boolean {
    return this.#watching;
  }

  /** The last list/watch error, while the loop is retrying after it. */
  get lastError(): unknown {
    return this.#lastError;
  }

  get(name: string): T | undefined {
    return this.#items.get(name);
  }

  list(): IterableIterator<T> {
    return this.#items.values();
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#loop = this.#run();
    this.#resyncTimer = setInterval(() => this.resync(), this.#o.timing.resyncIntervalMs);
    this.#resyncTimer.unref();
  }

  /** Resolves once listed and watching (caught up), or rejects after timeoutMs. */
  waitCaughtUp(timeoutMs: number): Promise<void> {
    if (this.caughtUp()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#syncWaiters = this.#syncWaiters.filter((w) => w !== done);
        const why = this.#lastError instanceof Error ? `: ${this.#lastError.message}` : "";
        reject(new Error(`${this.#o.name}: not caught up after ${timeoutMs} ms${why}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#syncWaiters.push(done);
    });
  }

  /** Forces a relist now (also used by the periodic resync). */
  resync(): void {
    this.#resourceVersion = "";
    this.#abort?.abort();
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#watching = false;
    this.#healthy = false;
    clearInterval(this.#resyncTimer);
    this.#abort?.abort();
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        if (this.#resourceVersion === "") await this.#relist();
        if (this.#stopped) break;
        await this.#watchOnce();
        this.#failures = 0;
        this.#lastError = undefined;
      } catch (err) {
        this.#watching = false;
        if (this.#stopped) break;
        if (statusCodeOf(err) === 410) {
          // Expired resourceVersion: relist at once; the replica is as fresh as it was.
          this.#resourceVersion = "";
          continue;
        }
        this.#healthy = false;
        this.#failures++;
        this.#lastError = err;
        const delay = Math.min(
          this.#o.timing.restartMaxMs,
          this.#o.timing.restartBaseMs * 2 ** Math.min(this.#failures - 1, 20),
        );
        this.#o.logger.warn(
          {
            reflector: this.#o.name,
            err: err instanceof Error ? err.message : String(err),
            retryInMs: delay,
          },
          "list/watch failed; retrying",
        );
        await this.#sleep(delay);
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }

  async #relist(): Promise<void> {
    const result = await this.#o.list();
    const next = new Map<string, T>();
    for (const item of result.items) {
      const name = item.metadata?.name;
      if (name !== undefined) next.set(name, item);
    }
    let changed = next.size !== this.#items.size;
    if (!changed) {
      for (const [name, item] of next) {
        if (this.#items.get(name)?.metadata?.resourceVersion !== item.metadata?.resourceVersion) {
          changed = true;
          break;
        }
      }
    }
    this.#items = next;
    this.#resourceVersion = result.metadata?.resourceVersion ?? "";
    this.#lastContactMs = this.#now();
    this.#healthy = true;
    const firstSync = !this.#synced;
    this.#synced = true;
    if (changed || firstSync) this.#o.onChange();
  }

  #watchOnce(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let ended = false;
      let status: WatchStatus | undefined;
      const query: Record<string, string | number | boolean | undefined> = {
        resourceVersion: this.#resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.#o.timing.watchTimeoutSeconds,
        fieldSelector: this.#o.fieldSelector,
      };
      const onEvent = (phase: string, obj: unknown): void => {
        if (ended) return;
        this.#lastContactMs = this.#now();
        if (phase === "ERROR") {
          status = obj as WatchStatus;
          return;
        }
        const item = obj as T;
        const rv = item.metadata?.resourceVersion;
        if (rv !== undefined && rv !== "") this.#resourceVersion = rv;
        const name = item.metadata?.name;
        if (phase === "BOOKMARK" || name === undefined) return;
        if (phase === "DELETED") this.#items.delete(name);
        else if (phase === "ADDED" || phase === "MODIFIED") this.#items.set(name, item);
        else return;
        this.#o.onChange();
      };
      const onDone = (err: unknown): void => {
        if (ended) return;
        ended = true;
        this.#watching = false;
        this.#abort = undefined;
        if (status !== undefined) {
          reject(new WatchEndedError(`watch error: ${status.message ?? "unknown"}`, status.code));
        } else if (err === null || err === undefined || isTimeout(err) || this.#stopped) {
          resolve();
        } else if (err instanceof Error && err.name === "AbortError") {
          resolve(); // resync() or stop()
        } else {
          reject(err);
        }
      };
      this.#watch
        .watch(this.#o.path, query, onEvent, onDone)
        .then((controller) => {
          if (ended) return;
          this.#abort = controller;
          this.#watching = true;
          this.#healthy = true;
          this.#lastContactMs = this.#now();
          if (this.#stopped) controller.abort();
          else for (const w of this.#syncWaiters.splice(0)) w();
        })
        .catch(onDone);
    });
  }
}
