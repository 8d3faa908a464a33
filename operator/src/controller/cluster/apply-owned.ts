import type { KubernetesObject } from "@kubernetes/client-node";
import { apiMessage } from "../../kube/api.ts";
import { needsApply, withAppliedHash } from "../../specs/applied-hash.ts";
import { describeDiff } from "../../specs/template-diff.ts";
import type { ClusterContext } from "./context.ts";

export type ApplyOutcome = "created" | "updated" | "unchanged";

/** Wraps an API failure with what was being done, for the Degraded message. */
export class StepError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StepError";
  }
}

/**
 * Server-side applies desired over current (from cache) when it changed or
 * drifted, with an Event and a log line saying why; skips (and says so at
 * debug) when the live object already matches.
 */
export async function applyOwned(
  ctx: ClusterContext,
  desiredPlain: KubernetesObject,
  current: KubernetesObject | undefined,
  what: string = `${desiredPlain.kind} ${desiredPlain.metadata?.name}`,
): Promise<ApplyOutcome> {
  const desired = withAppliedHash(desiredPlain);
  const decision = needsApply(current, desired);
  if (!decision.apply) {
    ctx.log.debug({ object: what }, "owned object up to date; not applying");
    return "unchanged";
  }
  const why =
    decision.reason === "missing"
      ? "missing"
      : `${decision.reason === "drift" ? "drifted" : "spec changed"}${decision.diff ? `: ${describeDiff(decision.diff)}` : ""}`;
  try {
    await ctx.deps.api.apply(desired);
  } catch (err) {
    const msg = `apply ${what}: ${apiMessage(err)}`;
    ctx.deps.recorder.record(ctx.cluster, "Warning", "ApplyFailed", msg);
    throw new StepError(msg, { cause: err });
  }
  const outcome: ApplyOutcome = current === undefined ? "created" : "updated";
  ctx.log.info({ object: what, why }, `${outcome} ${what}`);
  ctx.deps.recorder.record(
    ctx.cluster,
    "Normal",
    outcome === "created" ? "Created" : "Updated",
    outcome === "created" ? `created ${what}` : `updated ${what} (${why})`,
  );
  return outcome;
}
