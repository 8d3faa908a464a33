// The decisions the status step (controller/cluster/step-status.ts) makes
// around planMembers and clusterVerdict in one pass: the status object to
// write (with what the roll and scale steps decided, as merge-patch values),
// the facts the verdict reads that status alone does not hold, and when to
// come back.

import type {
  Condition,
  DrainCancelStatus,
  NaradClusterStatus,
  RollStatus,
  ScaleStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import type { ClusterVerdict } from "./cluster-status.ts";
import { getCondition } from "./conditions.ts";
import type { MembersResult } from "./members.ts";

/**
 * Once a cluster has been Ready it never goes back to "Creating": later
 * unready brokers are a degradation, not a slow start.
 */
export function everReady(prev: NaradClusterStatus): boolean {
  return (
    getCondition(prev.conditions, "Ready")?.status === "True" ||
    (prev.phase !== undefined && ["Running", "Degraded", "Rolling", "Scaling"].includes(prev.phase))
  );
}

/** The Degraded message of a drain cancel still owed (status.drainCancel). */
export function drainCancelMessage(d: DrainCancelStatus | undefined): string | undefined {
  if (d === undefined) return undefined;
  return `${d.pod} may still be draining (refusing produce) since its restart was abandoned at ${d.since}: cancelling its drain failed ${d.attempts} time(s)${d.lastError ? ` (${d.lastError})` : ""}; retrying every pass`;
}

/** The pod a persisted ReplacementNotReady condition names (plan/replacement.ts writes the message). */
export function stuckReplacementPod(conditions: readonly Condition[] | undefined): string | undefined {
  const c = getCondition(conditions, "Progressing");
  if (c?.reason !== "ReplacementNotReady") return undefined;
  return /^replacement pod (\S+) not Ready/.exec(c.message ?? "")?.[1];
}

/**
 * A status object (roll, scale) for a merge patch: null clears it, and a key
 * it had that the new value lacks is sent as null (a merge patch keeps absent keys).
 */
export function mergePatchOf(prev: object | undefined, next: object | undefined): unknown {
  if (next === undefined) return null;
  const out: Record<string, unknown> = { ...next };
  for (const k of Object.keys(prev ?? {})) if (!(k in out)) out[k] = null;
  return out;
}

export interface NextStatusInput {
  prev: NaradClusterStatus;
  /** metadata.generation. */
  generation: number;
  /** An earlier step failed this pass: this generation is not carried out. */
  stepFailed: boolean;
  verdict: ClusterVerdict;
  /** Pods not terminating, and how many of them are Ready. */
  pods: number;
  readyPods: number;
  membership: Pick<MembersResult, "members" | "epoch">;
  selector: string;
  /** status.roll, .drainCancel and .scale after this pass (undefined: cleared). */
  roll: RollStatus | undefined;
  drainCancel: DrainCancelStatus | undefined;
  scale: ScaleStatus | undefined;
  /** The StatefulSet's status revisions. */
  currentRevision: string | undefined;
  updateRevision: string | undefined;
}

/** The status to write: roll, drainCancel and scale as merge-patch values (null clears). */
export function nextClusterStatus(o: NextStatusInput): NaradClusterStatus {
  const status: NaradClusterStatus = {
    // A pass whose step failed has not carried out this generation.
    observedGeneration: o.stepFailed ? (o.prev.observedGeneration ?? 0) : o.generation,
    phase: o.verdict.phase,
    replicas: o.pods,
    readyReplicas: o.readyPods,
    conditions: o.verdict.conditions,
    members: o.membership.members,
    membershipEpoch: o.membership.epoch,
    selector: o.selector,
    roll: mergePatchOf(o.prev.roll ?? undefined, o.roll) as RollStatus,
    drainCancel: mergePatchOf(o.prev.drainCancel, o.drainCancel) as DrainCancelStatus,
    scale: mergePatchOf(o.prev.scale, o.scale) as ScaleStatus,
  };
  if (o.currentRevision !== undefined) status.currentRevision = o.currentRevision;
  if (o.updateRevision !== undefined) status.updateRevision = o.updateRevision;
  return status;
}

/**
 * When to reconcile again: `progressingMs` while the cluster is not Stable,
 * else the earliest recheck any judgement asked for (a Down grace, a
 * replacement timeout, caches settling); undefined when none did.
 */
export function statusRequeueMs(
  conditions: readonly Condition[],
  rechecks: ReadonlyArray<number | undefined>,
  progressingMs: number,
): number | undefined {
  const stable = getCondition(conditions, "Stable")?.status === "True";
  const candidates = [stable ? undefined : progressingMs, ...rechecks].filter(
    (v): v is number => v !== undefined,
  );
  return candidates.length ? Math.min(...candidates) : undefined;
}
