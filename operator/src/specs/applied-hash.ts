import { createHash } from "node:crypto";
import { ANNOTATION_APPLIED_HASH } from "../constants.ts";
import type { KubernetesObject } from "../kube/models.ts";
import { canonicalJson } from "./canonical-json.ts";
import { type FieldDiff, templateDiff } from "./template-diff.ts";

/** A copy of obj whose metadata carries the hash of obj itself (without that annotation). */
export function withAppliedHash<T extends KubernetesObject>(obj: T): T {
  const hash = createHash("sha256").update(canonicalJson(obj)).digest("hex").slice(0, 16);
  const metadata = obj.metadata ?? {};
  return {
    ...obj,
    metadata: { ...metadata, annotations: { ...metadata.annotations, [ANNOTATION_APPLIED_HASH]: hash } },
  };
}

export type ApplyDecision =
  | { apply: false }
  | { apply: true; reason: "missing" | "hash" | "drift"; diff?: FieldDiff };

/**
 * Whether desired (already carrying its hash) must be applied over current:
 * when current is absent, when the desired object changed since the last
 * apply (hash), or when someone changed a field we own (drift).
 */
export function needsApply(current: KubernetesObject | undefined, desired: KubernetesObject): ApplyDecision {
  if (current === undefined) return { apply: true, reason: "missing" };
  const want = desired.metadata?.annotations?.[ANNOTATION_APPLIED_HASH];
  const have = current.metadata?.annotations?.[ANNOTATION_APPLIED_HASH];
  const diff = templateDiff(current, withoutHash(desired));
  if (want !== have)
    return diff === undefined ? { apply: true, reason: "hash" } : { apply: true, reason: "hash", diff };
  if (diff !== undefined) return { apply: true, reason: "drift", diff };
  return { apply: false };
}

/**
 * desired as compared with the live object: without our hash annotation, and
 * without apiVersion/kind, which list results (and so informer caches) omit.
 */
function withoutHash(obj: KubernetesObject): KubernetesObject {
  const annotations = { ...obj.metadata?.annotations };
  delete annotations[ANNOTATION_APPLIED_HASH];
  const { apiVersion: _v, kind: _k, ...rest } = obj;
  return { ...rest, metadata: { ...obj.metadata, annotations } };
}
