// Fault bookkeeping: which faults exist, how often each fired in a run.
// The choice of WHEN a fault fires lives in world.ts (it needs the world's
// state); this module names them and counts them so a run can report its
// coverage.

export const faultKinds = [
  "crash",
  "down",
  "roll-maintenance",
  "decommission-removed",
  "stale-view",
  "long-stale-view",
  "drop-request",
  "drop-answer",
  "late-answer",
  "api-unavailable",
  "move",
  "topic-delete",
  "topic-create",
  "topic-recreate",
  "crash@wal-append-before-202",
  "crash@commit-before-checkpoint",
  "crash@owner-after-commit-before-answer",
  "crash@move-copy",
  "crash@move-freeze",
  "crash@move-finalize",
  "crash@move-swap",
  "crash@move-install",
  "crash@move-delete",
] as const;

export type FaultKind = (typeof faultKinds)[number];

export class FaultCounts {
  readonly counts = new Map<FaultKind, number>();

  add(kind: FaultKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  merge(other: FaultCounts): void {
    for (const [k, v] of other.counts) this.counts.set(k, (this.counts.get(k) ?? 0) + v);
  }

  format(): string {
    return faultKinds.map((k) => `${k.padEnd(40)} ${this.counts.get(k) ?? 0}`).join("\n");
  }
}
