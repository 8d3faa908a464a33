import type { Informer, KubernetesObject, ObjectCache } from "@kubernetes/client-node";
import type { CacheHealth } from "../plan/observation.ts";
import { type Clock, systemClock, type TimerHandle } from "./clock.ts";
import { backoffMs } from "./work-queue.ts";

// client-node's ListWatch relists on 410 Gone and reconnects when a watch
// ends, but on any other error (a failed list, a 403, a refused connection)
// it fires "error" and STOPS. This wrapper restarts it with capped
// exponential backoff, keeps its cache (start() resumes from the last
// resourceVersion, relisting only when needed), and reports every lifecycle
// step as a typed event instead of logging itself.

export type InformerEvent<T> =
  | { type: "add" | "update" | "delete"; object: T }
  | { type: "synced" }
  | { type: "error"; error: unknown; restartInMs: number };

export interface ResilientInformerOptions<T extends KubernetesObject> {
  name: string;
  informer: Informer<T> & ObjectCache<T>;
  onEvent: (ev: InformerEvent<T>) => void;
  clock?: Clock;
  restartBaseMs: number;
  restartMaxMs: number;
}

export class ResilientInformer<T extends KubernetesObject> {
  readonly name: string;
  readonly #o: ResilientInformerOptions<T>;
  readonly #clock: Clock;
  #synced = false;
  /** False from an error until a restart succeeds: the cache may be frozen meanwhile. */
  #healthy = false;
  #recoveredAtMs: number | undefined;
  #stopped = true;
  #failures = 0;
  #erroredThisStart = false;
  #restartTimer: TimerHandle | undefined;

  constructor(opts: ResilientInformerOptions<T>) {
    this.#o = opts;
    this.name = opts.name;
    this.#clock = opts.clock ?? systemClock;
    const inf = opts.informer;
    inf.on("add", (o: T) => opts.onEvent({ type: "add", object: o }));
    inf.on("update", (o: T) => opts.onEvent({ type: "update", object: o }));
    inf.on("delete", (o: T) => opts.onEvent({ type: "delete", object: o }));
    inf.on("error", (err: unknown) => this.#onError(err));
  }

  /** True once a list has succeeded (the cache reflects the server at least once). */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * Whether the cache follows the server now. "synced" never goes back to
   * false after the first list; this does, from a watch or list error until
   * a restart succeeds, and remembers when it last recovered.
   */
  get health(): CacheHealth {
    return { name: this.name, healthy: this.#healthy, recoveredAtMs: this.#recoveredAtMs };
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#o.informer.get(name, namespace);
  }

  list(namespace?: string): ReadonlyArray<T> {
    return this.#o.informer.list(namespace);
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#restartTimer?.cancel();
    this.#restartTimer = undefined;
    await this.#o.informer.stop();
  }

  async #start(): Promise<void> {
    if (this.#stopped) return;
    this.#erroredThisStart = false;
    try {
      await this.#o.informer.start();
    } catch (err) {
      this.#onError(err);
      return;
    }
    // start() resolves once the watch is open; a failed list fires "error"
    // and resolves too, so only an error-free start counts as synced.
    if (!this.#erroredThisStart && !this.#stopped) {
      this.#failures = 0;
      if (!this.#healthy && this.#synced) this.#recoveredAtMs = this.#clock.now();
      this.#healthy = true;
      if (!this.#synced) {
        this.#synced = true;
        this.#o.onEvent({ type: "synced" });
      }
    }
  }

  #onError(err: unknown): void {
    this.#erroredThisStart = true;
    this.#healthy = false;
    if (this.#stopped) return;
    this.#failures++;
    const delay = backoffMs(this.#failures, this.#o.restartBaseMs, this.#o.restartMaxMs);
    this.#o.onEvent({ type: "error", error: err, restartInMs: delay });
    this.#restartTimer?.cancel();
    this.#restartTimer = this.#clock.after(delay, () => {
      this.#restartTimer = undefined;
      void this.#start();
    });
  }
}
