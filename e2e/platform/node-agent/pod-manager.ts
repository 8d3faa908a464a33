// Routes pod watch events: unbound pods go to the binder, pods bound here get
// one PodWorker per UID. A same-named successor (StatefulSet) waits until
// its predecessor's worker has finished cleaning up.

import type { V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Binder } from "./binder.ts";
import { PodWorker, type WorkerDeps } from "./pod-worker.ts";

export class PodManager {
  readonly #deps: WorkerDeps;
  readonly #nodeName: string;
  readonly #binder: Binder;
  readonly #log: Logger;
  readonly #workers = new Map<string, PodWorker>();
  /** Latest object for a name whose previous UID is still shutting down. */
  readonly #waiting = new Map<string, V1Pod>();
  /** UIDs whose worker has finished: late watch events for them must not start a new worker. */
  readonly #finishedUids = new Set<string>();
  #shuttingDown = false;

  constructor(deps: WorkerDeps, nodeName: string, binder: Binder) {
    this.#deps = deps;
    this.#nodeName = nodeName;
    this.#binder = binder;
    this.#log = deps.log.child({ component: "pods" });
  }

  upsert = (pod: V1Pod): void => {
    if (this.#shuttingDown) return;
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) {
      this.#binder.consider(pod);
      return;
    }
    if (nodeName !== this.#nodeName) return;
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const uid = pod.metadata?.uid ?? "";
    const current = this.#workers.get(key);
    if (this.#finishedUids.has(uid)) return;
    if (current?.uid === uid) {
      current.update(pod);
      return;
    }
    if (current) {
      this.#waiting.set(key, pod);
      return;
    }
    const phase = pod.status?.phase;
    // A finished pod found after an agent restart is history, not work.
    if ((phase === "Succeeded" || phase === "Failed") && !pod.metadata?.deletionTimestamp) return;
    const worker = new PodWorker(this.#deps, pod);
    this.#workers.set(key, worker);
    this.#log.info({ pod: key, uid }, "pod assigned to this node");
    void worker.finished.then(() => {
      this.#finishedUids.add(uid);
      if (this.#workers.get(key) === worker) this.#workers.delete(key);
      const next = this.#waiting.get(key);
      this.#waiting.delete(key);
      if (next) this.upsert(next);
    });
    worker.start();
  };

  remove = (pod: V1Pod): void => {
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    // The object is gone, so no more events will name this UID.
    this.#finishedUids.delete(pod.metadata?.uid ?? "");
    const waiting = this.#waiting.get(key);
    if (waiting?.metadata?.uid === pod.metadata?.uid) this.#waiting.delete(key);
    const w = this.#workers.get(key);
    if (w && w.uid === pod.metadata?.uid) void w.forceStop();
  };

  /** Retries binding for pods whose earlier bind failed without a later watch event. */
  resync(pods: readonly V1Pod[]): void {
    for (const p of pods) if (!p.spec?.nodeName) this.#binder.consider(p);
  }

  async shutdown(graceMs: number): Promise<void> {
    this.#shuttingDown = true;
    await Promise.all([...this.#workers.values()].map((w) => w.shutdown(graceMs)));
  }
}
