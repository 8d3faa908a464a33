// Stands in for kube-scheduler: binds unscheduled pods to this node through
// the pods/binding subresource. The decision is pure (`bindRefusal`) so it
// can be tested; the agent races other agents harmlessly (409 = lost).

import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";

export const DEFAULT_SCHEDULER = "default-scheduler";

/** Why this node will not bind the pod, or null if it will. */
export function bindRefusal(pod: V1Pod, labels: Readonly<Record<string, string>>): string | null {
  const spec = pod.spec;
  if (!spec) return "no spec";
  if (spec.nodeName) return "already bound";
  if (pod.metadata?.deletionTimestamp) return "being deleted";
  if (spec.schedulerName && spec.schedulerName !== DEFAULT_SCHEDULER)
    return `scheduler ${spec.schedulerName}`;
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return "finished";
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return `nodeSelector ${k}=${v} does not match`;
  }
  // Required node affinity on hostname (the only label that tells nodes apart here).
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && terms.length > 0) {
    const termMatches = terms.some((t) =>
      (t.matchExpressions ?? []).every((e) => {
        const val = labels[e.key];
        switch (e.operator) {
          case "In":
            return val !== undefined && (e.values ?? []).includes(val);
          case "NotIn":
            return val === undefined || !(e.values ?? []).includes(val);
          case "Exists":
            return val !== undefined;
          case "DoesNotExist":
            return val === undefined;
          default:
            return true;
        }
      }),
    );
    if (!termMatches) return "node affinity does not match";
  }
  return null;
}

export class Binder {
  readonly #core: CoreV1Api;
  readonly #nodeName: string;
  readonly #labels: Readonly<Record<string, string>>;
  readonly #log: Logger;
  readonly #inFlight = new Set<string>();

  constructor(core: CoreV1Api, nodeName: string, labels: Readonly<Record<string, string>>, log: Logger) {
    this.#core = core;
    this.#nodeName = nodeName;
    this.#labels = labels;
    this.#log = log.child({ component: "binder" });
  }

  consider(pod: V1Pod): void {
    if (bindRefusal(pod, this.#labels) !== null) return;
    const uid = pod.metadata?.uid ?? "";
    if (this.#inFlight.has(uid)) return;
    this.#inFlight.add(uid);
    const name = pod.metadata?.name ?? "";
    const namespace = pod.metadata?.namespace ?? "default";
    void this.#core
      .createNamespacedPodBinding({
        name,
        namespace,
        body: {
          apiVersion: "v1",
          kind: "Binding",
          metadata: { name, namespace, uid },
          target: { apiVersion: "v1", kind: "Node", name: this.#nodeName },
        },
      })
      .then(
        () => this.#log.info({ pod: `${namespace}/${name}` }, "pod bound"),
        (err: unknown) => {
          const code = (err as { code?: number }).code;
          if (code !== 409 && code !== 404)
            this.#log.warn({ err, pod: `${namespace}/${name}` }, "binding failed");
        },
      )
      .finally(() => {
        // Keep failed UIDs out of the set so a later update retries.
        this.#inFlight.delete(uid);
      });
  }
}
