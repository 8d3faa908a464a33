// The producer registry's store in cluster mode: one ConfigMap per cluster,
// `<cluster>-producers`, data key `registry.json` (the RegistryState JSON).
//
//   - load(): a quorum GET (no resourceVersion), creating the ConfigMap with a
//     fresh state (random first id, registry-state.ts) when it is missing;
//     two brokers creating it at once: the loser's create gets 409 and it
//     reads the winner's.
//   - save(state, rev): a merge patch that carries metadata.resourceVersion
//     = rev. The API server applies a patch that names a resourceVersion only
//     if the object still has it (409 otherwise), so a block or an epoch bump
//     is written on exactly the state it was computed from: optimistic
//     concurrency with the `patch` verb, which the brokers' Role already uses
//     for NaradTopics (no `update` anywhere in it).
//   - peek(): a watch-fed copy (the metastore's Reflector), so a broker learns
//     epochs bumped through other brokers without a read per produce.
//
// The ConfigMap carries no ownerReference on purpose: it must outlive a
// deleted-and-recreated NaradCluster whose volumes (and the producer ids their
// logs remember) were kept.

import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderMiddleware,
  setHeaderOptions,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { NaradError } from "../errors.ts";
import { apiStatus, writeError } from "../meta/kube/api.ts";
import { Reflector, type ReflectorLogger, type ReflectorTiming } from "../meta/kube/reflector.ts";
import { RegistryConflict, type RegistryStore } from "./registry.ts";
import { freshRegistryState, parseRegistryState, type RegistryState } from "./registry-state.ts";

export const registryDataKey = "registry.json";
/** ConfigMaps hold at most 1 MiB; refuse a state well below it with a clear error instead of the API server's 422. */
export const maxRegistryBytes = 900 * 1024;

export interface KubeRegistryStoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The ConfigMap's name (resourceNames(cluster).producerRegistry). */
  name: string;
  /** Block size of the registry, so a fresh state starts on a block boundary. */
  block: number;
  logger: ReflectorLogger;
  requestTimeoutMs?: number;
  retryAfterSeconds?: number;
  timing?: ReflectorTiming;
}

const defaultTiming: ReflectorTiming = {
  watchTimeoutSeconds: 20,
  restartBaseMs: 200,
  restartMaxMs: 10_000,
  resyncIntervalMs: 5 * 60_000,
  maxSilenceMs: 45_000,
};

function stateOf(cm: V1ConfigMap): RegistryState {
  const text = cm.data?.[registryDataKey];
  if (text === undefined) throw new Error(`ConfigMap ${cm.metadata?.name}: no ${registryDataKey}`);
  return parseRegistryState(text);
}

export async function kubeRegistryStore(o: KubeRegistryStoreOptions): Promise<RegistryStore> {
  const core = o.kubeConfig.makeApiClient(CoreV1Api);
  const timeoutMs = o.requestTimeoutMs ?? 5_000;
  const retryAfter = o.retryAfterSeconds ?? 2;
  const what = `producer registry ConfigMap ${o.namespace}/${o.name}`;
  // Every request gets its own deadline, as in meta/kube/api.ts (client-node
  // takes Observable middleware it does not export: wrap the header one).
  const passthrough = setHeaderMiddleware("Accept", "application/json");
  const deadline: ReturnType<typeof setHeaderMiddleware> = {
    pre: (ctx) => {
      ctx.setSignal(AbortSignal.timeout(timeoutMs));
      return passthrough.pre(ctx);
    },
    post: (response) => passthrough.post(response),
  };
  const opts = () => ({ middleware: [deadline], middlewareMergeStrategy: "append" as const });
  const fail = (err: unknown): never => {
    if (err instanceof RegistryConflict) throw err;
    throw writeError(err, what, retryAfter);
  };

  const reflector = new Reflector<V1ConfigMap>({
    name: `configmaps/${o.namespace}/${o.name}`,
    kubeConfig: o.kubeConfig,
    path: `/api/v1/namespaces/${o.namespace}/configmaps`,
    fieldSelector: `metadata.name=${o.name}`,
    list: () =>
      core.listNamespacedConfigMap(
        { namespace: o.namespace, fieldSelector: `metadata.name=${o.name}` },
        opts(),
      ),
    onChange: () => {
      watched = undefined;
    },
    timing: o.timing ?? defaultTiming,
    logger: o.logger,
  });
  // Parsed lazily, once per change of the watched object.
  let watched: RegistryState | undefined;
  let watchedBad = false;

  const load = async (): Promise<{ state: RegistryState; rev: string }> => {
    for (let attempt = 0; attempt < 5; attempt++) {
      let cm: V1ConfigMap;
      try {
        cm = await core.readNamespacedConfigMap({ namespace: o.namespace, name: o.name }, opts());
      } catch (err) {
        if (apiStatus(err) !== 404) return fail(err);
        try {
          cm = await core.createNamespacedConfigMap(
            {
              namespace: o.namespace,
              body: {
                metadata: { name: o.name, labels: { "app.kubernetes.io/part-of": "narad" } },
                data: { [registryDataKey]: JSON.stringify(freshRegistryState(o.block)) },
              },
            },
            opts(),
          );
        } catch (createErr) {
          if (apiStatus(createErr) === 409) continue; // another broker created it first: read theirs
          return fail(createErr);
        }
      }
      return { state: stateOf(cm), rev: cm.metadata?.resourceVersion ?? "" };
    }
    throw new NaradError("UNAVAILABLE", `${what}: could not be read or created`, {
      retryAfterSeconds: retryAfter,
    });
  };

  const first = await load();
  reflector.start();

  return {
    load,
    async save(state, rev): Promise<string> {
      const text = JSON.stringify(state);
      if (text.length > maxRegistryBytes)
        throw new NaradError(
          "CONFLICT",
          `the producer registry would exceed ${maxRegistryBytes} bytes (a ConfigMap holds 1 MiB); lower --max-named-producers or reuse names`,
        );
      try {
        const cm = await core.patchNamespacedConfigMap(
          {
            namespace: o.namespace,
            name: o.name,
            body: { metadata: { resourceVersion: rev }, data: { [registryDataKey]: text } },
          },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch, opts()),
        );
        return cm.metadata?.resourceVersion ?? "";
      } catch (err) {
        const status = apiStatus(err);
        if (status === 409) throw new RegistryConflict(`${what}: resourceVersion ${rev} is stale`);
        // Deleted under us: the next load re-creates it (with fresh, random ids).
        if (status === 404) throw new RegistryConflict(`${what}: deleted`);
        return fail(err);
      }
    },
    peek(): RegistryState {
      if (watched !== undefined) return watched;
      const cm = reflector.get(o.name);
      if (cm === undefined) return first.state;
      try {
        watched = stateOf(cm);
        watchedBad = false;
      } catch (err) {
        if (!watchedBad)
          o.logger.warn(
            { err: String(err) },
            "producer registry ConfigMap unreadable; ignoring the watched copy",
          );
        watchedBad = true;
        return first.state;
      }
      return watched;
    },
    close: () => reflector.stop(),
  };
}
