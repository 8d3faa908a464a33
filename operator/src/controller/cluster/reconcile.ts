import { withClusterDefaults } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../../packages/api/src/v1alpha1/types.ts";
import { API_GROUP_VERSION, CLUSTER_KIND } from "../../constants.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { type ReconcileDeps, splitKey } from "../deps.ts";
import type { ClusterContext, StepResult } from "./context.ts";
import { ensureBaseObjects } from "./step-base.ts";
import { rollPods } from "./step-roll.ts";
import { scaleCluster } from "./step-scale.ts";
import { ensureSecurityObjects } from "./step-secrets.ts";
import { ensureStatefulSet } from "./step-statefulset.ts";
import { updateClusterStatus } from "./step-status.ts";
import { ensureStorage } from "./step-storage.ts";

// The NaradCluster reconcile, a ladder (CloudNativePG style): each step
// either falls through or stops with a requeue. The status step always runs
// last, so a failed step shows in conditions; the failure is then rethrown
// for the work queue's backoff.
//
//   1. base objects: ServiceAccount, Role, RoleBinding, ConfigMap, Services, PDB, ServiceMonitor
//   1b. security: generated Secrets (created once when missing), NetworkPolicy (step-secrets.ts)
//   2. StatefulSet (template updated, no pod restarted by it: OnDelete)
//   3. volume expansion: raise PVC requests when spec.storage.size grows (step-storage.ts)
//   4. drained rolling restart: one action per pass (step-roll.ts)
//   5. members and status

const STEPS: ReadonlyArray<{ name: string; run: (ctx: ClusterContext) => Promise<StepResult> }> = [
  { name: "base-objects", run: ensureBaseObjects },
  { name: "security", run: ensureSecurityObjects },
  { name: "statefulset", run: ensureStatefulSet },
  { name: "storage", run: ensureStorage },
  { name: "roll", run: rollPods },
  // scale-down (decommission with partition moves) and rebalance, after the
  // roll so it sees this pass's roll decision (the two never overlap)
  { name: "scale", run: scaleCluster },
];

export async function reconcileCluster(key: string, deps: ReconcileDeps): Promise<ReconcileResult> {
  const { namespace, name } = splitKey(key);
  const log = deps.log.child({ cluster: key });
  const cached = deps.caches.clusters.get(namespace, name);
  if (cached === undefined) {
    log.debug("NaradCluster not found (deleted); its owned objects are garbage-collected");
    return {};
  }
  if (cached.metadata.deletionTimestamp) {
    log.info("NaradCluster is being deleted; nothing to do (owned objects are garbage-collected)");
    if (cached.metadata.uid) deps.memory.forget(cached.metadata.uid);
    return {};
  }
  // List results lack apiVersion/kind; Events and ownerReferences need them.
  const cluster: NaradCluster = { ...cached, apiVersion: API_GROUP_VERSION, kind: CLUSTER_KIND };
  const ctx: ClusterContext = {
    cluster,
    spec: resolveSpec(cluster, deps.defaultBrokerImage),
    namespace,
    name,
    deps,
    log,
    refused: [],
    configHash: undefined,
    roll: undefined,
    requeueAfterMs: undefined,
  };

  let stepError: unknown;
  let stopped: StepResult | undefined;
  for (const step of STEPS) {
    try {
      const r = await step.run(ctx);
      if (!r.next) {
        log.info(
          { step: step.name, requeueAfterMs: r.requeueAfterMs },
          `stopped at ${step.name}: ${r.reason}`,
        );
        stopped = r;
        break;
      }
    } catch (err) {
      log.warn({ step: step.name, err }, `step ${step.name} failed`);
      stepError = err;
      break;
    }
  }
  const status = await updateClusterStatus(ctx, stepError);
  if (stepError !== undefined) throw stepError;
  const delays = [
    stopped?.next === false ? stopped.requeueAfterMs : undefined,
    ctx.requeueAfterMs,
    status.requeueAfterMs,
  ].filter((v): v is number => v !== undefined);
  return delays.length ? { requeueAfterMs: Math.min(...delays) } : {};
}

/** Defaults, plus the operator-wide broker image for clusters that do not name one. */
export function resolveSpec(
  cluster: NaradCluster,
  defaultBrokerImage: string | undefined,
): ResolvedNaradClusterSpec {
  const spec = withClusterDefaults(cluster.spec);
  if (cluster.spec?.image === undefined && defaultBrokerImage) spec.image = defaultBrokerImage;
  return spec;
}
