import type { Logger } from "pino";
import type {
  DrainCancelStatus,
  NaradCluster,
  ResolvedNaradClusterSpec,
  RollStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { RollAction } from "../../plan/roll.ts";
import type { ScalePlan } from "../../plan/scale.ts";
import type { StoragePlan } from "../../plan/storage.ts";
import type { ReconcileDeps } from "../deps.ts";

/** One NaradCluster reconcile: what every step reads, and what steps report to the status step. */
export interface ClusterContext {
  cluster: NaradCluster;
  spec: ResolvedNaradClusterSpec;
  namespace: string;
  name: string;
  deps: ReconcileDeps;
  log: Logger;
  /** Spec changes refused this pass, with reasons (surface in Degraded). */
  refused: string[];
  /** configHash() of the ConfigMap data, set by the base step. */
  configHash: string | undefined;
  /** Set by the roll step: what status.roll becomes and what the roll did this pass. */
  roll: RollOutcome | undefined;
  /** Set by the scale step: status.scale to write, member holds, progress or refusal. */
  scale?: ScalePlan | undefined;
  /** Set by the storage step: volume expansion progress or refusal (undefined: the step did not run). */
  storage?: StoragePlan | undefined;
  /** Earliest requeue asked for by a step that fell through (the roll while it runs). */
  requeueAfterMs: number | undefined;
}

export interface RollOutcome {
  /** status.roll to write (undefined: cleared). */
  next: RollStatus | undefined;
  action: RollAction;
  /** Live pods not at the update revision. */
  outdated: number;
  /** status.drainCancel to write: a drain cancel still owed (undefined: none). */
  drainCancel: DrainCancelStatus | undefined;
}

/** A step either falls through to the next one or stops the ladder with a requeue. */
export type StepResult = { next: true } | { next: false; requeueAfterMs: number; reason: string };

export const NEXT: StepResult = { next: true };
