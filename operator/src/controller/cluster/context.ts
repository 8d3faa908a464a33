import type { Logger } from "pino";
import type { NaradCluster, ResolvedNaradClusterSpec } from "../../api/v1alpha1/types.ts";
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
}

/** A step either falls through to the next one or stops the ladder with a requeue. */
export type StepResult = { next: true } | { next: false; requeueAfterMs: number; reason: string };

export const NEXT: StepResult = { next: true };
