// Decommission requests on the Kubernetes metastore, the I/O half
// (core/decommission.ts decides): read the NaradCluster from the API server,
// decide, and write spec.replicas through its scale subresource, conditional
// on the resourceVersion the decision was made from, so a change meanwhile
// (another scale, the operator marking the member Removed) makes the write
// fail with nothing changed instead of overriding it. The operator carries
// the new size out (operator/src/plan/scale.ts).

import type { KubeConfig } from "@kubernetes/client-node";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import type { Config } from "../config.ts";
import {
  afterConflict,
  type DecommissionControl,
  decideKubernetes,
  type ScaleObservation,
} from "../core/decommission.ts";
import { NaradError } from "../errors.ts";
import { apiMessage, apiStatus, naradApi, writeError } from "../meta/kube/api.ts";
import { kubeMetastoreTiming, loadKubeConfig } from "../meta/kube-metastore.ts";
import type { Metastore } from "../meta/types.ts";

/** The two calls a decision needs. */
export interface ClusterScaleApi {
  /** The NaradCluster as the API server has it now. */
  read(): Promise<ScaleObservation>;
  /** Writes spec.replicas if the object is still at `resourceVersion`; false when it is not (409). */
  setReplicas(replicas: number, resourceVersion: string): Promise<boolean>;
}

export interface DecommissionLogger {
  info(obj: object, msg: string): void;
}

/** What a NaradCluster says for one decision. */
export function observationOf(c: NaradCluster): ScaleObservation {
  return {
    replicas: withClusterDefaults(c.spec).replicas,
    resourceVersion: c.metadata.resourceVersion ?? "",
    members: (c.status?.members ?? []).map((m) => ({ id: m.id, ordinal: m.ordinal, state: m.state })),
    rolling: c.status?.roll?.podInFlight,
  };
}

export function kubeClusterScale(o: {
  kubeConfig: KubeConfig;
  namespace: string;
  clusterName: string;
  requestTimeoutMs: number;
  retryAfterSeconds: number;
}): ClusterScaleApi {
  const api = naradApi(o.kubeConfig, o.namespace, o.requestTimeoutMs);
  const what = `NaradCluster ${o.namespace}/${o.clusterName}`;
  const failed = (err: unknown, doing: string): NaradError => {
    const status = apiStatus(err);
    // A Role written by an operator older than this broker lacks the scale
    // permission; the operator's next reconcile grants it.
    if (status === 403)
      return new NaradError(
        "UNAVAILABLE",
        `${doing}: the broker's Role does not allow it (${apiMessage(err)}); the operator updates the Role`,
        { retryAfterSeconds: o.retryAfterSeconds },
      );
    if (status === 404)
      return new NaradError("UNAVAILABLE", `${doing}: ${what} not found`, {
        retryAfterSeconds: o.retryAfterSeconds,
      });
    return writeError(err, doing, o.retryAfterSeconds);
  };
  return {
    async read() {
      try {
        return observationOf(await api.getCluster(o.clusterName));
      } catch (err) {
        throw failed(err, `read ${what}`);
      }
    },
    async setReplicas(replicas, resourceVersion) {
      try {
        await api.patchClusterScale(o.clusterName, { metadata: { resourceVersion }, spec: { replicas } });
        return true;
      } catch (err) {
        if (apiStatus(err) === 409) return false;
        throw failed(err, `scale ${what} to ${replicas}`);
      }
    },
  };
}

/**
 * Decide and write, again from a fresh read after a lost write while only
 * status moved (the operator writes it every pass during a decommission);
 * refused once spec.replicas itself changed, or after `attempts` losses.
 */
export function decommissionControl(
  api: ClusterScaleApi,
  logger: DecommissionLogger,
  attempts = 4,
): DecommissionControl {
  return {
    async request(id, cancel) {
      const first = await api.read();
      let seen = first;
      let d = decideKubernetes(first, id, cancel);
      for (let i = 0; i < attempts; i++) {
        if (d.kind !== "scale") return d;
        if (await api.setReplicas(d.replicas, seen.resourceVersion)) {
          logger.info({ member: id, from: d.from, replicas: d.replicas }, d.why);
          return d;
        }
        seen = await api.read();
        d = afterConflict(first, seen, id, cancel);
      }
      if (d.kind !== "scale") return d;
      return {
        kind: "refuse",
        status: 409,
        error: `the NaradCluster kept changing while this request was decided (${attempts} conditional writes lost); nothing was changed by this request: retry`,
      };
    },
  };
}

/** The node's decommission control: Kubernetes only (one node has nothing to decommission). */
export function nodeDecommissions(
  config: Pick<Config, "namespace" | "clusterName">,
  metastore: Pick<Metastore, "kind">,
  logger: DecommissionLogger & { child(bindings: object): DecommissionLogger },
): { decommissions?: DecommissionControl } {
  if (metastore.kind !== "kubernetes") return {};
  const api = kubeClusterScale({
    kubeConfig: loadKubeConfig(),
    namespace: config.namespace,
    clusterName: config.clusterName,
    requestTimeoutMs: kubeMetastoreTiming.requestTimeoutMs,
    retryAfterSeconds: kubeMetastoreTiming.retryAfterSeconds,
  });
  return { decommissions: decommissionControl(api, logger.child({ component: "decommission" })) };
}
