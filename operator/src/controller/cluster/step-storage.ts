import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { BROKER_DATA_VOLUME } from "../../constants.ts";
import { getCondition } from "../../plan/conditions.ts";
import { type ClaimView, planStorage, quantityBytes, type StorageClassView } from "../../plan/storage.ts";
import { resourceNames, selectorString } from "../../specs/labels.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step 3: volume expansion. When spec.storage.size grows, raise each broker
// PVC's request and let the StorageClass's resizer (external-resizer + kubelet
// on a real cluster, the node agent on the local platform) grow the volume
// online: no pod is restarted. Decisions are in plan/storage.ts.
//
// The StatefulSet's volumeClaimTemplates are immutable; they are left at the
// size the StatefulSet was created with (step-statefulset.ts keeps them)
// rather than deleting the StatefulSet with orphan cascade and recreating it:
// that would leave a window with no StatefulSet for the other steps and a
// crash in between to recover from. The price: a PVC the StatefulSet
// creates later (scale-up) starts at the template size and is expanded here
// once it is bound.

/** How soon to look again while a resize is in progress (PVCs are not watched). */
const EXPANSION_RECHECK_MS = 3_000;
const EXPANDING_REASON = "ExpandingVolumes";

export async function ensureStorage(ctx: ClusterContext): Promise<StepResult> {
  const { deps, spec, cluster } = ctx;
  const stsName = resourceNames(ctx.name).statefulSet;
  const sts = deps.caches.statefulSets.get(ctx.namespace, stsName);
  if (sts === undefined) return NEXT; // its PVCs do not exist yet
  const wasExpanding = getCondition(cluster.status?.conditions, "Progressing")?.reason === EXPANDING_REASON;
  // One list per reconcile, always: the template size says nothing about
  // claims expanded earlier (a later spec equal to the template is a shrink).
  const namePattern = new RegExp(`^${BROKER_DATA_VOLUME}-${escapeRegExp(stsName)}-[0-9]+$`);
  const claims = (await deps.storage.listClaims(ctx.namespace, selectorString(ctx.name)))
    .filter((c) => namePattern.test(c.metadata?.name ?? "") && !c.metadata?.deletionTimestamp)
    .map(claimView);
  // StorageClasses are read only when some claim has to grow.
  const want = quantityBytes(spec.storage.size);
  const growing = claims.filter((c) => c.request === undefined || quantityBytes(c.request) < want);
  const classes: StorageClassView[] = [];
  for (const name of new Set(growing.map((c) => c.storageClassName))) {
    if (name === undefined) continue;
    const sc = await deps.storage.getStorageClass(name);
    if (sc !== undefined) classes.push({ name, allowVolumeExpansion: sc.allowVolumeExpansion === true });
  }
  const plan = planStorage({ size: spec.storage.size, claims, classes });
  ctx.storage = plan;

  if (plan.kind === "refused") {
    ctx.log.warn({ reason: plan.reason }, plan.message);
    deps.recorder.record(cluster, "Warning", plan.reason, plan.message);
    return NEXT;
  }
  if (plan.kind === "settled") {
    if (wasExpanding) {
      const msg = `every broker volume is at ${spec.storage.size} or more (${claims.length} PVCs)`;
      ctx.log.info(msg);
      deps.recorder.record(cluster, "Normal", "VolumesExpanded", msg);
    }
    return NEXT;
  }
  for (const name of plan.patch) {
    const c = claims.find((x) => x.name === name);
    await deps.storage.resizeClaim(ctx.namespace, name, plan.size);
    const msg = `requested ${name}: ${c?.request ?? "?"} → ${plan.size} (StorageClass ${c?.storageClassName ?? "?"}); the volume grows online, no pod restarts`;
    ctx.log.info(msg);
    deps.recorder.record(cluster, "Normal", "VolumeExpansion", msg);
  }
  ctx.log.debug(plan.message);
  ctx.requeueAfterMs = Math.min(ctx.requeueAfterMs ?? EXPANSION_RECHECK_MS, EXPANSION_RECHECK_MS);
  return NEXT;
}

function claimView(c: V1PersistentVolumeClaim): ClaimView {
  return {
    name: c.metadata?.name ?? "",
    request: c.spec?.resources?.requests?.["storage"],
    capacity: c.status?.capacity?.["storage"],
    storageClassName: c.spec?.storageClassName ?? undefined,
    bound: c.status?.phase === "Bound",
    conditions: (c.status?.conditions ?? []).filter((x) => x.status === "True").map((x) => x.type),
  };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
