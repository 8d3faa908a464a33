// The `volume-id` marker of a data dir (ADR 0007, "Volume identity"): who
// this volume belongs to. Pure: parsing and the classification of what was
// found on disk; replication-io/volume-id-file.ts reads and writes it.

export interface VolumeIdentity {
  /** Random, chosen when the marker is first written: a new volume gets a new one. */
  uuid: string;
  /** The cluster this volume was written for (the operator's cluster uid; "" on a single node). */
  clusterUid: string;
  /** The member (broker id) that wrote it. */
  memberId: string;
}

export const volumeIdFileName = "volume-id";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function encodeVolumeId(v: VolumeIdentity): Buffer {
  return Buffer.from(`${JSON.stringify({ uuid: v.uuid, clusterUid: v.clusterUid, memberId: v.memberId })}\n`);
}

/** The marker's contents, or null when they are not a marker this code wrote. */
export function parseVolumeId(buf: Buffer): VolumeIdentity | null {
  let v: unknown;
  try {
    v = JSON.parse(buf.toString("utf8"));
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.uuid !== "string" || !uuidPattern.test(o.uuid)) return null;
  if (typeof o.clusterUid !== "string" || typeof o.memberId !== "string" || o.memberId === "") return null;
  return { uuid: o.uuid, clusterUid: o.clusterUid, memberId: o.memberId };
}

export type VolumeClass =
  /**
   * The marker names this cluster and member: the volume is the one this
   * broker wrote. `adopt`: the marker was written before the broker knew its
   * cluster's uid (clusterUid ""); it is rewritten with the uid, same uuid.
   */
  | { kind: "own"; identity: VolumeIdentity; adopt?: VolumeIdentity }
  /** No marker: a new (or wiped) volume. The broker writes a fresh identity and holds no replica data. */
  | { kind: "missing" }
  /** A marker of another member or cluster, or one that does not parse: never served, never overwritten. */
  | { kind: "foreign"; reason: string; found: VolumeIdentity | null };

/** What a broker found in its data dir, given who it is. `raw` is null when the file does not exist. */
export function classifyVolume(
  raw: Buffer | null,
  self: { clusterUid: string; memberId: string },
): VolumeClass {
  if (raw === null) return { kind: "missing" };
  const found = parseVolumeId(raw);
  if (found === null) return { kind: "foreign", reason: "the volume-id marker does not parse", found: null };
  // A broker that does not know its cluster's uid ("") cannot judge the
  // cluster; a marker written before the uid was known ("") is this
  // cluster's as long as the member matches (the operator passes the uid
  // since the volume-id marker exists, so such a volume never left it).
  const sameCluster =
    found.clusterUid === self.clusterUid || self.clusterUid === "" || found.clusterUid === "";
  if (!sameCluster)
    return {
      kind: "foreign",
      reason: `the volume belongs to cluster "${found.clusterUid}", not "${self.clusterUid}"`,
      found,
    };
  if (found.memberId !== self.memberId)
    return {
      kind: "foreign",
      reason: `the volume belongs to member "${found.memberId}", not "${self.memberId}"`,
      found,
    };
  if (found.clusterUid === "" && self.clusterUid !== "")
    return { kind: "own", identity: found, adopt: { ...found, clusterUid: self.clusterUid } };
  return { kind: "own", identity: found };
}
