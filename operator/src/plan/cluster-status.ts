import type {
  Condition,
  MemberStatus,
  NaradClusterPhase,
  NaradClusterStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { canonicalJson } from "../specs/canonical-json.ts";
import { type ConditionInput, setConditions } from "./conditions.ts";
import type { RollAction } from "./roll.ts";
import type { ScalePlan } from "./scale.ts";
import type { StoragePlan } from "./storage.ts";

// Phase and conditions of a NaradCluster from what the reconcile observed.
// Pure: the controller gathers the facts, this decides what they mean.

export interface ClusterFacts {
  generation: number;
  specReplicas: number;
  /** Pods that exist (owned, not terminating). */
  pods: number;
  readyPods: number;
  members: readonly MemberStatus[];
  statefulSetExists: boolean;
  /** spec.replicas of the live StatefulSet (undefined when it does not exist). */
  statefulSetReplicas: number | undefined;
  /** Pods whose revision differs from the StatefulSet's update revision. */
  outdatedPods: number;
  /** Spec changes the operator refuses to carry out (scale-down, volume changes), each with its reason. */
  refused: readonly string[];
  /** A reconcile step that failed this pass (message), if any. */
  stepError: string | undefined;
  /** True once the cluster has been Ready at least once (from the previous status). */
  everReady: boolean;
  /** Rolling restart facts (undefined: the roll step did not run and none is in flight). */
  roll?: RollFacts | undefined;
  /** Scale step outcome (undefined: it did not run this pass). */
  scale?:
    | { progress: ScalePlan["progress"]; blocked: string | undefined; stuck?: string | undefined }
    | undefined;
  /** Volume expansion (undefined: the storage step did not run this pass). */
  storage?: StoragePlan | undefined;
  /** A planned restart's replacement pod not Ready past its bound (plan/replacement.ts): the message. */
  stuckReplacement?: string | undefined;
  /** A drain cancel owed since an abandoned restart and not yet confirmed (Degraded DrainCancelPending). */
  drainCancel?: string | undefined;
}

export interface RollFacts {
  /** status.roll.podInFlight after this pass. */
  inFlight: string | undefined;
  /** 1 while the pod in flight is missing or not Ready (a planned unavailability), else 0. */
  plannedUnavailable: number;
  /** What the roll step decided this pass. */
  action: RollAction | undefined;
  paused: boolean;
}

export interface ClusterVerdict {
  phase: NaradClusterPhase;
  conditions: Condition[];
}

export function clusterVerdict(
  facts: ClusterFacts,
  previous: readonly Condition[] | undefined,
  nowIso: string,
): ClusterVerdict {
  const g = facts.generation;
  const roll = facts.roll;
  const inFlight = roll?.inFlight;
  // A replacement stuck past its bound is no longer a planned absence.
  const stuckReplacement = facts.stuckReplacement !== undefined;
  const planned = stuckReplacement ? 0 : (roll?.plannedUnavailable ?? 0);
  const action = roll?.action;
  const stuck = action?.kind === "stuck" ? action : undefined;
  const aborted = action?.kind === "abort" ? action : undefined;
  const down = facts.members.filter((m) => m.state === "Down").map((m) => m.id);
  // The member in a planned restart is expected to be away: not a problem;
  // nor are members leaving in a scale-down (ordinals past spec.replicas).
  const notActive = facts.members
    .filter(
      (m) => m.state !== "Active" && !(m.id === inFlight && m.state === "Maintenance" && !stuckReplacement),
    )
    .filter((m) => m.ordinal < facts.specReplicas)
    .map((m) => `${m.id}=${m.state}`);
  const allReady =
    facts.statefulSetExists && facts.readyPods + planned >= facts.specReplicas && notActive.length === 0;

  const ready: ConditionInput = allReady
    ? {
        type: "Ready",
        status: "True",
        reason: inFlight !== undefined ? "RollingUpdate" : "AllMembersActive",
        message:
          inFlight !== undefined
            ? `${facts.readyPods}/${facts.specReplicas} brokers ready; ${inFlight} in a planned restart`
            : `${facts.readyPods}/${facts.specReplicas} brokers ready and Active`,
        observedGeneration: g,
      }
    : {
        type: "Ready",
        status: "False",
        reason: facts.statefulSetExists ? "MembersNotReady" : "Creating",
        message: facts.statefulSetExists
          ? `${facts.readyPods}/${facts.specReplicas} brokers ready${notActive.length ? `; not Active: ${notActive.join(", ")}` : ""}`
          : "the StatefulSet does not exist yet",
        observedGeneration: g,
      };

  const rollWait = action?.kind === "wait" ? action.reason : undefined;
  let progressing: ConditionInput;
  if (facts.stuckReplacement !== undefined) {
    progressing = {
      type: "Progressing",
      status: "False",
      reason: "ReplacementNotReady",
      message: facts.stuckReplacement,
      observedGeneration: g,
    };
  } else if (aborted !== undefined) {
    progressing = {
      type: "Progressing",
      status: "False",
      reason: "RollAborted",
      message: aborted.reason,
      observedGeneration: g,
    };
  } else if (stuck !== undefined) {
    progressing = {
      type: "Progressing",
      status: "False",
      reason: "RollBlocked",
      message: stuck.reason,
      observedGeneration: g,
    };
  } else if (inFlight !== undefined) {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: "RollingUpdate",
      message: `restarting ${inFlight} (${facts.outdatedPods} pod(s) outdated)${rollWait ? `: ${rollWait}` : ""}`,
      observedGeneration: g,
    };
  } else if (facts.scale?.progress !== undefined) {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: facts.scale.progress.reason,
      message: facts.scale.progress.message,
      observedGeneration: g,
    };
  } else if (!facts.statefulSetExists || facts.pods < facts.specReplicas) {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: "CreatingPods",
      message: `${facts.pods}/${facts.specReplicas} broker pods exist`,
      observedGeneration: g,
    };
  } else if (facts.readyPods < facts.specReplicas && !facts.everReady) {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: "PodsStarting",
      message: `${facts.readyPods}/${facts.specReplicas} brokers ready`,
      observedGeneration: g,
    };
  } else if (facts.outdatedPods > 0 && roll?.paused === true) {
    progressing = {
      type: "Progressing",
      status: "Unknown",
      reason: "RolloutPaused",
      message: `${facts.outdatedPods} pod(s) run an older pod template; rollout paused (spec.rollout.paused)`,
      observedGeneration: g,
    };
  } else if (facts.outdatedPods > 0) {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: "RollingUpdate",
      message: `${facts.outdatedPods} pod(s) run an older pod template${rollWait ? `; waiting: ${rollWait}` : ""}`,
      observedGeneration: g,
    };
  } else if (facts.storage?.kind === "expanding") {
    progressing = {
      type: "Progressing",
      status: "True",
      reason: "ExpandingVolumes",
      message: facts.storage.message,
      observedGeneration: g,
    };
  } else {
    progressing = {
      type: "Progressing",
      status: "False",
      reason: "UpToDate",
      message: "every pod runs the current template",
      observedGeneration: g,
    };
  }

  const problems: string[] = [];
  if (facts.stepError !== undefined) problems.push(facts.stepError);
  if (facts.stuckReplacement !== undefined) problems.push(facts.stuckReplacement);
  if (stuck !== undefined) problems.push(`rolling restart blocked: ${stuck.reason}`);
  if (aborted !== undefined) problems.push(`rolling restart aborted: ${aborted.reason}`);
  if (down.length > 0) problems.push(`members Down: ${down.join(", ")}`);
  if (facts.everReady && facts.readyPods + planned < facts.specReplicas) {
    problems.push(`${facts.specReplicas - facts.readyPods - planned} broker(s) not ready`);
  }
  const storageRefused = facts.storage?.kind === "refused" ? facts.storage : undefined;
  if (storageRefused !== undefined) problems.push(storageRefused.message);
  problems.push(...facts.refused);
  if (facts.scale?.blocked !== undefined) problems.push(facts.scale.blocked);
  if (facts.scale?.stuck !== undefined) problems.push(facts.scale.stuck);
  if (facts.drainCancel !== undefined) problems.push(facts.drainCancel);
  const degradedReason =
    facts.stepError !== undefined
      ? "ReconcileError"
      : facts.stuckReplacement !== undefined
        ? "ReplacementNotReady"
        : facts.scale?.blocked !== undefined
          ? "ScaleDownBlocked"
          : facts.scale?.stuck !== undefined
            ? "MoveStuck"
            : facts.drainCancel !== undefined
              ? "DrainCancelPending"
              : stuck !== undefined
                ? "RollBlocked"
                : aborted !== undefined
                  ? "RollAborted"
                  : down.length > 0
                    ? "MemberDown"
                    : storageRefused !== undefined
                      ? storageRefused.reason
                      : facts.refused.length > 0
                        ? "ChangeRefused"
                        : "BrokersNotReady";
  const degraded: ConditionInput =
    problems.length > 0
      ? {
          type: "Degraded",
          status: "True",
          reason: degradedReason,
          message: problems.join("; "),
          observedGeneration: g,
        }
      : {
          type: "Degraded",
          status: "False",
          reason: "Healthy",
          message: "no problems observed",
          observedGeneration: g,
        };

  const stable = ready.status === "True" && progressing.status === "False" && degraded.status === "False";
  const stableCond: ConditionInput = stable
    ? {
        type: "Stable",
        status: "True",
        reason: "Settled",
        message: "ready, up to date and healthy at this generation",
        observedGeneration: g,
      }
    : {
        type: "Stable",
        status: "False",
        reason: "NotSettled",
        message: [ready, progressing, degraded]
          .filter((c) => (c.type === "Ready" ? c.status !== "True" : c.status === "True"))
          .map((c) => `${c.type}: ${c.reason}`)
          .join("; "),
        observedGeneration: g,
      };

  let phase: NaradClusterPhase;
  if (!facts.statefulSetExists) phase = facts.stepError !== undefined ? "Failed" : "Pending";
  else if (!facts.everReady && !allReady) phase = "Creating";
  else if (degraded.status === "True") phase = "Degraded";
  else if (inFlight !== undefined || (facts.outdatedPods > 0 && roll !== undefined && !roll.paused))
    phase = "Rolling";
  else if (facts.statefulSetReplicas !== facts.specReplicas || facts.scale?.progress !== undefined)
    phase = "Scaling";
  else phase = allReady ? "Running" : "Degraded";

  return { phase, conditions: setConditions(previous, [ready, progressing, degraded, stableCond], nowIso) };
}

/**
 * Whether the status this pass differs from the stored one in anything worth
 * a write. Compares only the keys the status step writes (others, e.g. roll
 * fields set elsewhere, are not its business). A member's walPendingRecords
 * is information that changes on nearly every pass under load: a change of
 * the count alone is not worth a write unless it crosses zero (drained or
 * not); the fresh counts go along with the next write made for another reason.
 */
export function statusNeedsWrite(prev: NaradClusterStatus, next: NaradClusterStatus): boolean {
  const pick = (s: NaradClusterStatus, walOf: (m: MemberStatus) => unknown) =>
    Object.fromEntries(
      Object.keys(next).map((k) => {
        const v = (s as Record<string, unknown>)[k] ?? null;
        if (k !== "members" || !Array.isArray(v)) return [k, v];
        return [k, (v as MemberStatus[]).map((m) => ({ ...m, walPendingRecords: walOf(m) }))];
      }),
    );
  const zeroness = (m: MemberStatus) =>
    m.walPendingRecords === undefined ? null : m.walPendingRecords === 0 ? "drained" : "pending";
  return canonicalJson(pick(prev, zeroness)) !== canonicalJson(pick(next, zeroness));
}
