import type { BrokerVolume } from "../broker-client/types.ts";

// Member volume identities (ADR 0007 "Volume identity"). Each broker reports
// the `volume-id` marker of its data dir in /admin/v1/status; the operator
// records it in status.members[].volumeId. ISR entries name the volume their
// member held when it joined, so a member on another volume matches none of
// its entries: it is not in sync, it cannot be elected, and a leader on it is
// replaced. Pure.

/**
 * Prefix of a recorded volume id for a volume the broker refuses to serve
 * (another member's or cluster's marker, or one that does not parse). It is
 * recorded, so the change shows, but never matches an ISR entry.
 */
export const FOREIGN_VOLUME_PREFIX = "foreign:";

/** What status.members[].volumeId records for a broker's answer. */
export function recordedVolumeId(v: BrokerVolume): string {
  if (v.state === "foreign") return `${FOREIGN_VOLUME_PREFIX}${v.uuid ?? "unreadable"}`;
  return v.uuid;
}

/**
 * The volume a member serves data from: its recorded id, or undefined while
 * it is not known or the volume is foreign (a replica there holds nothing).
 */
export function servingVolume(recorded: string | undefined): string | undefined {
  if (recorded === undefined || recorded === "" || recorded.startsWith(FOREIGN_VOLUME_PREFIX))
    return undefined;
  return recorded;
}

/** Whether the recorded id names a volume the broker refuses to serve. */
export function isForeignVolume(recorded: string | undefined): boolean {
  return recorded?.startsWith(FOREIGN_VOLUME_PREFIX) === true;
}

export interface VolumeChange {
  member: string;
  from: string;
  to: string;
}

/**
 * The volume id to record per member: this pass's answer when its broker
 * answered with one, else the last recorded value (a broker that does not
 * answer keeps it). A value that differs from the recorded one is a change:
 * the member came back on another volume.
 */
export function nextVolumeIds(
  previous: ReadonlyMap<string, string | undefined>,
  reported: ReadonlyMap<string, string>,
): { volumeIds: Map<string, string>; changes: VolumeChange[] } {
  const volumeIds = new Map<string, string>();
  const changes: VolumeChange[] = [];
  for (const [id, prev] of previous) if (prev !== undefined && prev !== "") volumeIds.set(id, prev);
  for (const [id, now] of reported) {
    const prev = previous.get(id);
    if (prev !== undefined && prev !== "" && prev !== now) changes.push({ member: id, from: prev, to: now });
    volumeIds.set(id, now);
  }
  changes.sort((a, b) => (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  return { volumeIds, changes };
}
