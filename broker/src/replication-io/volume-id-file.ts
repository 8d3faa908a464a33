// Reads the data dir's volume-id marker at start and writes a fresh one on
// a volume that has none (replication/volume-id.ts classifies). A foreign
// marker is reported, never overwritten: the volume is someone else's.

import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import {
  classifyVolume,
  encodeVolumeId,
  type VolumeClass,
  type VolumeIdentity,
  volumeIdFileName,
} from "../replication/volume-id.ts";
import { readIfExists, writeFileAtomic } from "./atomic-file.ts";

export type VolumeAtStart =
  /** "created": the marker was missing and was written now (a new or wiped volume). */
  | { kind: "own" | "created"; identity: VolumeIdentity }
  | { kind: "foreign"; reason: string; found: VolumeIdentity | null };

export async function readVolumeId(
  dataDir: string,
  self: { clusterUid: string; memberId: string },
): Promise<VolumeClass> {
  return classifyVolume(await readIfExists(join(dataDir, volumeIdFileName)), self);
}

/** The volume's identity, writing one when it is missing. */
export async function ensureVolumeId(
  dataDir: string,
  self: { clusterUid: string; memberId: string },
): Promise<VolumeAtStart> {
  await mkdir(dataDir, { recursive: true });
  const found = await readVolumeId(dataDir, self);
  if (found.kind === "own" && found.adopt !== undefined) {
    // Written before the cluster uid was known: the same volume (same uuid), now named.
    await writeFileAtomic(join(dataDir, volumeIdFileName), encodeVolumeId(found.adopt));
    return { kind: "own", identity: found.adopt };
  }
  if (found.kind === "own") return { kind: "own", identity: found.identity };
  if (found.kind === "foreign") return found;
  const identity: VolumeIdentity = { uuid: randomUUID(), ...self };
  await writeFileAtomic(join(dataDir, volumeIdFileName), encodeVolumeId(identity));
  return { kind: "created", identity };
}
