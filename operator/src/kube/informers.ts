import {
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  makeInformer,
} from "@kubernetes/client-node";
import { INFORMER_RESTART_BASE_MS, INFORMER_RESTART_MAX_MS } from "../constants.ts";
import type { CacheHealth } from "../plan/observation.ts";
import type { Clock } from "./clock.ts";
import { type InformerEvent, ResilientInformer } from "./informer.ts";

// The kinds the operator caches, and a set of informers per kind: one
// cluster-wide, or one per watched namespace. Lookups go to the informer
// that covers the namespace.

export interface KindSpec {
  /** Short name for logs and metrics. */
  name: string;
  apiVersion: string;
  kind: string;
  plural: string;
  /** Only objects matching this label selector are cached. */
  labelSelector?: string;
}

export function resourcePath(spec: KindSpec, namespace: string | undefined): string {
  const base = spec.apiVersion.includes("/") ? `/apis/${spec.apiVersion}` : `/api/${spec.apiVersion}`;
  return namespace === undefined
    ? `${base}/${spec.plural}`
    : `${base}/namespaces/${encodeURIComponent(namespace)}/${spec.plural}`;
}

export interface KindCache<T extends KubernetesObject> {
  readonly spec: KindSpec;
  get(namespace: string, name: string): T | undefined;
  list(namespace?: string): T[];
  readonly synced: boolean;
  /** One entry per informer behind this cache (optional: simple fakes are always healthy). */
  readonly health?: readonly CacheHealth[];
}

export class KindInformers<T extends KubernetesObject> implements KindCache<T> {
  readonly spec: KindSpec;
  /** namespace ("" = all) → informer */
  readonly #informers = new Map<string, ResilientInformer<T>>();

  constructor(opts: {
    kc: KubeConfig;
    spec: KindSpec;
    /** Empty = cluster-wide. */
    namespaces: readonly string[];
    clock: Clock;
    onEvent: (spec: KindSpec, ev: InformerEvent<T>) => void;
  }) {
    this.spec = opts.spec;
    const objects = KubernetesObjectApi.makeApiClient(opts.kc);
    const scopes = opts.namespaces.length === 0 ? [undefined] : [...opts.namespaces];
    for (const ns of scopes) {
      const list = () =>
        objects.list<T>(
          opts.spec.apiVersion,
          opts.spec.kind,
          ns,
          undefined,
          undefined,
          undefined,
          undefined,
          opts.spec.labelSelector,
        ) as Promise<KubernetesListObject<T>>;
      const informer = makeInformer<T>(opts.kc, resourcePath(opts.spec, ns), list, opts.spec.labelSelector);
      this.#informers.set(
        ns ?? "",
        new ResilientInformer<T>({
          name: `${opts.spec.name}${ns ? `@${ns}` : ""}`,
          informer,
          clock: opts.clock,
          restartBaseMs: INFORMER_RESTART_BASE_MS,
          restartMaxMs: INFORMER_RESTART_MAX_MS,
          onEvent: (ev) => opts.onEvent(opts.spec, ev),
        }),
      );
    }
  }

  get synced(): boolean {
    return [...this.#informers.values()].every((i) => i.synced);
  }

  get health(): CacheHealth[] {
    return [...this.#informers.values()].map((i) => i.health);
  }

  start(): void {
    for (const i of this.#informers.values()) i.start();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((i) => i.stop()));
  }

  get(namespace: string, name: string): T | undefined {
    return this.#for(namespace)?.get(name, namespace);
  }

  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.#informers.values()].flatMap((i) => [...i.list()]);
    return [...(this.#for(namespace)?.list(namespace) ?? [])];
  }

  #for(namespace: string): ResilientInformer<T> | undefined {
    return this.#informers.get("") ?? this.#informers.get(namespace);
  }
}
