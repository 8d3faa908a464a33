import type { V1PersistentVolumeClaim, V1StatefulSet } from "@kubernetes/client-node";
import { statefulSetReplicas } from "../../plan/scale.ts";
import { resourceNames } from "../../specs/labels.ts";
import { statefulSetSpec } from "../../specs/statefulset.ts";
import { describeDiff, templateDiff } from "../../specs/template-diff.ts";
import { applyOwned } from "./apply-owned.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step 2: the brokers' StatefulSet. Applying a new template (image, config
// hash, pod knobs, restart annotation) restarts no pod by itself: the
// StatefulSet is OnDelete, and the roll step (step-roll.ts) restarts pods
// one at a time, each drained first.
//
// Two spec changes are refused here rather than sent to the API server,
// which would reject the whole update (these StatefulSet fields are
// immutable) and so block every other change:
// - a scale-down past members still holding data: replicas only drop past
//   members the scale step (step-scale.ts) has decommissioned (Removed), one
//   at a time, highest ordinal first (plan/scale.ts statefulSetReplicas);
// - a change to the volume claim template. The live templates are always
//   kept: a size change is carried out on the PVCs themselves by the storage
//   step (step-storage.ts), a StorageClass change is refused.

export async function ensureStatefulSet(ctx: ClusterContext): Promise<StepResult> {
  const { cluster, spec, deps } = ctx;
  if (ctx.configHash === undefined)
    throw new Error("ensureStatefulSet: the base step did not set configHash");
  const name = resourceNames(ctx.name).statefulSet;
  const current = deps.caches.statefulSets.get(ctx.namespace, name);
  const desired = statefulSetSpec({ cluster, spec, configHash: ctx.configHash });
  if (current !== undefined) {
    keepReplicasOnScaleDown(ctx, current, desired);
    keepClaimTemplates(ctx, current, desired);
  }
  const templateChange =
    current?.spec !== undefined && desired.spec !== undefined
      ? templateDiff(current.spec.template, desired.spec.template)
      : undefined;
  const outcome = await applyOwned(ctx, desired, current);
  if (outcome === "updated" && templateChange !== undefined) {
    const field = { ...templateChange, path: `spec.template.${templateChange.path}` };
    const msg = `pod template changed (${describeDiff(field)}); ${ctx.spec.rollout.paused ? "rollout paused: no pod is restarted until spec.rollout.paused is false" : "pods are restarted one at a time, each drained first"}`;
    ctx.log.info({ field: field.path }, msg);
    deps.recorder.record(cluster, "Normal", "TemplateUpdated", msg);
  }
  return NEXT;
}

function keepReplicasOnScaleDown(ctx: ClusterContext, current: V1StatefulSet, desired: V1StatefulSet): void {
  const have = current.spec?.replicas ?? 0;
  const want = desired.spec?.replicas ?? 0;
  if (want >= have || desired.spec === undefined) return;
  const keep = statefulSetReplicas(want, have, ctx.cluster.status?.members ?? []);
  desired.spec.replicas = keep;
  if (keep < have)
    ctx.log.info(
      { have, keep, want },
      `shrinking the StatefulSet to ${keep}: ordinal ${keep} is decommissioned`,
    );
}

function keepClaimTemplates(ctx: ClusterContext, current: V1StatefulSet, desired: V1StatefulSet): void {
  const live = current.spec?.volumeClaimTemplates;
  const want = desired.spec?.volumeClaimTemplates;
  if (live === undefined || want === undefined || desired.spec === undefined) return;
  const diff = templateDiff(live.map(claimShape), want.map(claimShape));
  if (diff === undefined) return;
  // Immutable: always send the live templates back (a size change alone is
  // the storage step's job and refused nowhere here).
  const classDiff = templateDiff(live.map(claimClass), want.map(claimClass));
  desired.spec.volumeClaimTemplates = want.map((w) => {
    const l = live.find((c) => c.metadata?.name === w.metadata?.name);
    if (l?.spec === undefined || w.spec === undefined) return w;
    const kept: V1PersistentVolumeClaim = { ...w, spec: { ...w.spec, resources: l.spec.resources } };
    if (kept.spec !== undefined) {
      if (l.spec.storageClassName !== undefined) kept.spec.storageClassName = l.spec.storageClassName;
      else delete kept.spec.storageClassName;
    }
    return kept;
  });
  if (classDiff === undefined) return;
  const msg = `volume claim change refused (${describeDiff(classDiff)}): the StorageClass of existing volumes cannot change; existing volumes are kept`;
  ctx.refused.push(msg);
  ctx.log.warn(msg);
  ctx.deps.recorder.record(ctx.cluster, "Warning", "VolumeChangeRefused", msg);
}

/** The StorageClass part of a claim template. */
function claimClass(c: V1PersistentVolumeClaim) {
  return { name: c.metadata?.name, storageClassName: c.spec?.storageClassName };
}

/** The parts of a claim template we set and compare (the server adds volumeMode, status...). */
function claimShape(c: V1PersistentVolumeClaim) {
  return {
    name: c.metadata?.name,
    storage: c.spec?.resources?.requests?.["storage"],
    storageClassName: c.spec?.storageClassName,
  };
}
