// Probe bookkeeping (pure): consecutive results against thresholds, and the
// timing fields with the kubelet's defaults.

import type { V1Probe } from "@kubernetes/client-node";

export type ProbeKind = "startup" | "readiness" | "liveness";
export type ProbeResult = "unknown" | "success" | "failure";

export interface ProbeState {
  readonly result: ProbeResult;
  readonly successes: number;
  readonly failures: number;
}

export interface ProbeTiming {
  readonly initialDelayMs: number;
  readonly periodMs: number;
  readonly timeoutMs: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
}

const DEFAULT_PERIOD_S = 10;
const DEFAULT_TIMEOUT_S = 1;
const DEFAULT_FAILURE_THRESHOLD = 3;
const S_TO_MS = 1_000;

export function probeTiming(probe: V1Probe): ProbeTiming {
  return {
    initialDelayMs: (probe.initialDelaySeconds ?? 0) * S_TO_MS,
    periodMs: Math.max(1, probe.periodSeconds ?? DEFAULT_PERIOD_S) * S_TO_MS,
    timeoutMs: Math.max(1, probe.timeoutSeconds ?? DEFAULT_TIMEOUT_S) * S_TO_MS,
    successThreshold: Math.max(1, probe.successThreshold ?? 1),
    failureThreshold: Math.max(1, probe.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD),
  };
}

/**
 * Before the first probe: readiness is not ready, liveness is assumed alive,
 * startup is undecided (the container is not "started" yet).
 */
export function initialProbeState(kind: ProbeKind): ProbeState {
  const result: ProbeResult = kind === "readiness" ? "failure" : kind === "liveness" ? "success" : "unknown";
  return { result, successes: 0, failures: 0 };
}

export function observeProbe(state: ProbeState, ok: boolean, timing: ProbeTiming): ProbeState {
  if (ok) {
    const successes = state.successes + 1;
    const result = successes >= timing.successThreshold ? "success" : state.result;
    return { result, successes, failures: 0 };
  }
  const failures = state.failures + 1;
  const result = failures >= timing.failureThreshold ? "failure" : state.result;
  return { result, successes: 0, failures };
}
