import type { Condition, ConditionStatus } from "../../../packages/api/src/v1alpha1/types.ts";

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
}

/**
 * Sets one condition by type, returning a new list. lastTransitionTime moves
 * only when the status changes (metav1.Condition semantics); reason, message
 * and observedGeneration are refreshed every time.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  nowIso: string,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const cond: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: prev !== undefined && prev.status === next.status ? prev.lastTransitionTime : nowIso,
  };
  if (next.observedGeneration !== undefined) cond.observedGeneration = next.observedGeneration;
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return list;
}

export function setConditions(
  conditions: readonly Condition[] | undefined,
  next: readonly ConditionInput[],
  nowIso: string,
): Condition[] {
  let list = [...(conditions ?? [])];
  for (const c of next) list = setCondition(list, c, nowIso);
  return list;
}

export function getCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === "True";
}
