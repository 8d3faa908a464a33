// Minimum body rate, pure: after a grace period a request body must have
// averaged at least minBytesPerSecond since its first byte was awaited. A
// client that declares 64 MiB and sends a byte every few seconds would
// otherwise hold its share of the produce memory budget for days; an honest
// slow link keeps far above the floor.

export interface BodyRateOptions {
  /** 0 turns the check off. */
  minBytesPerSecond: number;
  graceMs: number;
}

export type BodyRateVerdict = { ok: true; recheckInMs: number } | { ok: false };

/** Whether `received` bytes after `elapsedMs` are fast enough, and when to look again. */
export function bodyRateVerdict(received: number, elapsedMs: number, o: BodyRateOptions): BodyRateVerdict {
  if (o.minBytesPerSecond <= 0) return { ok: true, recheckInMs: Number.POSITIVE_INFINITY };
  if (elapsedMs >= o.graceMs && received < (o.minBytesPerSecond * elapsedMs) / 1000) return { ok: false };
  // The moment the bytes received so far stop being enough (never before the grace ends).
  const enoughUntilMs = Math.max(o.graceMs, (received / o.minBytesPerSecond) * 1000);
  return { ok: true, recheckInMs: Math.max(1, Math.ceil(enoughUntilMs - elapsedMs) + 1) };
}
