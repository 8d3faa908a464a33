// client-node's informer stops for good on a watch or list error (anything
// but 410 and client timeouts). This wrapper restarts it after a delay, which
// relists and so also catches up on events missed while it was down.

import {
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
} from "@kubernetes/client-node";
import type { Logger } from "pino";

export const INFORMER_RESTART_DELAY_MS = 2_000;

export interface Handlers<T> {
  readonly upsert: (obj: T) => void;
  readonly remove: (obj: T) => void;
}

export interface ResilientInformer<T> {
  list(): readonly T[];
  stop(): Promise<void>;
  /** Resolves once the first list has been delivered. */
  readonly synced: Promise<void>;
}

export function startInformer<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  listFn: () => Promise<KubernetesListObject<T>>,
  handlers: Handlers<T>,
  log: Logger,
): ResilientInformer<T> {
  let stopped = false;
  let resolveSynced!: () => void;
  const synced = new Promise<void>((r) => {
    resolveSynced = r;
  });
  // The first list is delivered as "add" events before start() resolves.
  const informer = makeInformer<T>(kc, path, async () => {
    const list = await listFn();
    return list;
  });
  informer.on("add", handlers.upsert);
  informer.on("update", handlers.upsert);
  informer.on("delete", handlers.remove);
  const restart = () => {
    if (stopped) return;
    setTimeout(() => {
      if (stopped) return;
      informer.start().then(resolveSynced, (err: unknown) => {
        log.warn({ err, path }, "informer restart failed");
        restart();
      });
    }, INFORMER_RESTART_DELAY_MS);
  };
  informer.on("error", (err: unknown) => {
    // stop() aborts the watch request, which reports as an error: not one.
    if (stopped) return;
    log.warn({ err, path }, "informer error; restarting");
    restart();
  });
  informer.start().then(resolveSynced, (err: unknown) => {
    log.warn({ err, path }, "informer start failed; retrying");
    restart();
  });
  return {
    list: () => informer.list(),
    synced,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}
