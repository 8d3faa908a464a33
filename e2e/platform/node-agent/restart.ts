// Restart decisions and crash-loop backoff (pure).
//
// The kubelet backs off 10 s doubling to 5 min. Tests cannot wait that long,
// so the agent uses 1 s doubling to a 30 s cap; the shape is the same, so a
// crash-looping pod still slows down visibly in `restartCount` timing.

export const RESTART_BACKOFF_BASE_MS = 1_000;
export const RESTART_BACKOFF_CAP_MS = 30_000;
/** A container that ran this long before exiting starts again from the base delay (kubelet: 10 min). */
export const RESTART_BACKOFF_RESET_AFTER_MS = 60_000;

export type RestartPolicy = "Always" | "OnFailure" | "Never";

export function parseRestartPolicy(value: string | undefined): RestartPolicy {
  return value === "OnFailure" || value === "Never" ? value : "Always";
}

/** Whether a regular container that exited with `exitCode` is started again. */
export function shouldRestart(policy: RestartPolicy, exitCode: number): boolean {
  if (policy === "Always") return true;
  if (policy === "OnFailure") return exitCode !== 0;
  return false;
}

/** Init containers never restart after success; `Always` behaves like `OnFailure` for them. */
export function shouldRestartInit(policy: RestartPolicy, exitCode: number): boolean {
  return exitCode !== 0 && policy !== "Never";
}

/**
 * Delay before the next start. `consecutiveCrashes` counts exits since the
 * last long run (1 for the first crash). The first restart waits the base.
 */
export function restartDelayMs(consecutiveCrashes: number): number {
  const exp = Math.max(0, consecutiveCrashes - 1);
  return Math.min(RESTART_BACKOFF_BASE_MS * 2 ** Math.min(exp, 30), RESTART_BACKOFF_CAP_MS);
}

/** Crash counter after an exit: reset when the container had run long enough. */
export function nextCrashCount(previous: number, ranForMs: number): number {
  return ranForMs >= RESTART_BACKOFF_RESET_AFTER_MS ? 1 : previous + 1;
}
