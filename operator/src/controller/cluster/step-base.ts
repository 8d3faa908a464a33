import type { KubernetesObject } from "@kubernetes/client-node";
import { BROKER_CONFIG_FILE } from "../../constants.ts";
import { apiMessage } from "../../kube/api.ts";
import { inServiceOrdinals } from "../../plan/roll.ts";
import { canonicalJson } from "../../specs/canonical-json.ts";
import { configHash, configMapSpec } from "../../specs/configmap.ts";
import { resourceNames } from "../../specs/labels.ts";
import { podDisruptionBudgetSpec } from "../../specs/pdb.ts";
import { roleBindingSpec, roleSpec, serviceAccountSpec } from "../../specs/rbac.ts";
import {
  POD_MONITOR_KIND,
  podMonitorSpec,
  SERVICE_MONITOR_API_VERSION,
  SERVICE_MONITOR_KIND,
  serviceMonitorSpec,
} from "../../specs/service-monitor.ts";
import { clientServiceSpec, headlessServiceSpec } from "../../specs/services.ts";
import type { OwnedKind } from "../deps.ts";
import { applyOwned } from "./apply-owned.ts";
import { clusterPodViews } from "./cluster-pods.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step 1: everything the pods need before they start — RBAC for the
// brokers' metastore access, the config file, the Services, the PDB — and
// the optional ServiceMonitor.

export async function ensureBaseObjects(ctx: ClusterContext): Promise<StepResult> {
  const { cluster, spec } = ctx;
  const configMap = configMapSpec(cluster, spec);
  ctx.configHash = configHash(configMap.data ?? {});
  const objects: Array<[OwnedKind, KubernetesObject]> = [
    ["ServiceAccount", serviceAccountSpec(cluster)],
    ["Role", roleSpec(cluster)],
    ["RoleBinding", roleBindingSpec(cluster)],
    ["ConfigMap", configMap],
    ["Service", headlessServiceSpec(cluster)],
    ["Service", clientServiceSpec(cluster)],
    ["PodDisruptionBudget", podDisruptionBudgetSpec(cluster, brokersInService(ctx))],
  ];
  for (const [kind, desired] of objects) {
    const current = ctx.deps.caches.owned.get(kind)?.get(ctx.namespace, desired.metadata?.name ?? "");
    const outcome = await applyOwned(ctx, desired, current);
    if (kind === "ConfigMap" && outcome === "updated") {
      ctx.log.info(
        { configHash: ctx.configHash, config: configMap.data?.[BROKER_CONFIG_FILE] },
        "broker config changed; pods pick it up as the roll restarts them (or on their next restart while paused)",
      );
    }
  }
  await ensureServiceMonitor(ctx);
  return NEXT;
}

/**
 * Brokers in service now, counted as the roll's gate counts them (members
 * above spec.replicas still serve until their decommission removes them).
 */
function brokersInService(ctx: ClusterContext): number {
  return inServiceOrdinals({
    replicas: ctx.spec.replicas,
    pods: clusterPodViews(ctx),
    members: ctx.cluster.status?.members ?? [],
  }).length;
}

/**
 * The ServiceMonitor and PodMonitor kinds exist only where prometheus-operator
 * is installed, so they are not cached: the last applied hash is remembered
 * in memory, and a failure to apply one is a Warning, not a failed reconcile.
 */
async function ensureServiceMonitor(ctx: ClusterContext): Promise<void> {
  await ensureMonitor(ctx, {
    kind: SERVICE_MONITOR_KIND,
    field: "serviceMonitor",
    desired: serviceMonitorSpec(ctx.cluster, ctx.spec),
    memory: ctx.deps.memory.serviceMonitor,
  });
  await ensureMonitor(ctx, {
    kind: POD_MONITOR_KIND,
    field: "podMonitor",
    desired: podMonitorSpec(ctx.cluster, ctx.spec),
    memory: ctx.deps.memory.podMonitor,
  });
}

async function ensureMonitor(
  ctx: ClusterContext,
  m: {
    kind: string;
    field: "serviceMonitor" | "podMonitor";
    desired: KubernetesObject | undefined;
    memory: Map<string, string>;
  },
): Promise<void> {
  const { cluster, deps } = ctx;
  const uid = cluster.metadata.uid ?? "";
  const { desired, kind } = m;
  const remembered = m.memory.get(uid);
  if (desired === undefined) {
    if (remembered === "absent") return;
    const name = resourceNames(cluster.metadata.name ?? "")[m.field];
    const deleted = await deps.api.delete({
      apiVersion: SERVICE_MONITOR_API_VERSION,
      kind,
      namespace: ctx.namespace,
      name,
    });
    if (deleted) {
      ctx.log.info(`deleted ${kind} (spec.metrics.${m.field}.enabled is false)`);
      deps.recorder.record(cluster, "Normal", "Deleted", `deleted ${kind} ${name}: monitoring disabled`);
    }
    m.memory.set(uid, "absent");
    return;
  }
  const hash = canonicalJson(desired);
  if (remembered === hash) return;
  try {
    await deps.api.apply(desired);
    m.memory.set(uid, hash);
    ctx.log.info(`applied ${kind}`);
    deps.recorder.record(cluster, "Normal", "Updated", `applied ${kind} ${desired.metadata?.name}`);
  } catch (err) {
    const msg = `${kind} not applied (is prometheus-operator installed?): ${apiMessage(err)}`;
    ctx.log.warn({ err }, msg);
    deps.recorder.record(cluster, "Warning", `${kind}Failed`, msg);
  }
}
