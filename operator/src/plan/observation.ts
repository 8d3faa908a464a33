// How far the operator may believe what it sees. Pure, so a seeded
// simulation can drive the interleavings (outage, recovery, leadership gap)
// that decide whether a member is declared Down.

/** One informer's health, as the kube layer reports it (ResilientInformer.health). */
export interface CacheHealth {
  name: string;
  /** False from a watch or list error until a restart succeeds. */
  healthy: boolean;
  /**
   * Operator-clock time of the last recovery (error → healthy); undefined
   * when the informer never failed since its first sync.
   */
  recoveredAtMs: number | undefined;
}

export interface ObservationTrust {
  trusted: boolean;
  /** Why not ("pods: watch failing", "pods: recovered 12s ago, settling for 60s"); undefined when trusted. */
  reason: string | undefined;
  /** When trusted is false because of settling: how long until it ends. */
  retryAfterMs: number | undefined;
}

/**
 * Whether the caches can carry a Down decision. After an API outage the
 * kubelets' heartbeats were missed too: the node lifecycle controller may
 * flip pods to not Ready, and the kubelets correct that only on their next
 * status sync. So for settleMs after a recovery what the cache shows about
 * readiness is treated as unknown.
 */
export function judgeObservations(
  caches: readonly CacheHealth[],
  nowMs: number,
  settleMs: number,
): ObservationTrust {
  const failing = caches.filter((c) => !c.healthy).map((c) => c.name);
  if (failing.length > 0)
    return { trusted: false, reason: `watch failing: ${failing.join(", ")}`, retryAfterMs: undefined };
  let wait = 0;
  const settling: string[] = [];
  for (const c of caches) {
    if (c.recoveredAtMs === undefined) continue;
    const left = c.recoveredAtMs + settleMs - nowMs;
    if (left > 0) {
      wait = Math.max(wait, left);
      settling.push(`${c.name} recovered ${Math.round((nowMs - c.recoveredAtMs) / 1000)}s ago`);
    }
  }
  if (settling.length > 0)
    return {
      trusted: false,
      reason: `${settling.join(", ")}; settling for ${Math.round(settleMs / 1000)}s`,
      retryAfterMs: wait,
    };
  return { trusted: true, reason: undefined, retryAfterMs: undefined };
}

/**
 * The next "broker unreachable since" map from this pass's admin-status
 * probes (member id → answered). A failure keeps the start of its unbroken
 * run; an answer ends it; a member not probed this pass loses its run (no
 * observation, no evidence).
 */
export function trackReachability(
  previous: ReadonlyMap<string, number>,
  probes: ReadonlyMap<string, boolean>,
  nowMs: number,
): Map<string, number> {
  const next = new Map<string, number>();
  for (const [id, answered] of probes) {
    if (answered) continue;
    next.set(id, previous.get(id) ?? nowMs);
  }
  return next;
}
