// The `incarnation` file: 8 random bytes as 16 lowercase hex chars, written
// once when the WAL directory is created and never changed. Partition owners
// dedup re-commits by (incarnation, seq), so a WAL that lost its identity
// must not silently take a new one while old segments still exist.

import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { type FileIo, writeFully } from "../storage/file-io.ts";
import { WalError, type WalLogger } from "./errors.ts";

export const incarnationFileName = "incarnation";
const incarnationPattern = /^[0-9a-f]{16}$/;

/**
 * Returns the directory's incarnation, creating directory and file when the
 * directory holds no segments yet. Order: mkdir -p, fsync parent; write
 * incarnation.tmp, fsync; rename; fsync dir (crash before the rename leaves
 * no incarnation and no segments, so the next open starts over).
 */
export async function loadOrCreateIncarnation(
  io: FileIo,
  dir: string,
  hasSegments: boolean,
  log: WalLogger,
): Promise<string> {
  const existing = await io.readFile(join(dir, incarnationFileName));
  if (existing !== undefined) {
    const text = existing.toString("latin1");
    if (!incarnationPattern.test(text)) {
      throw new WalError("WAL_INCARNATION_INVALID", `${dir}/incarnation is malformed`);
    }
    return text;
  }
  if (hasSegments) {
    throw new WalError("WAL_INCARNATION_INVALID", `${dir} has WAL segments but no incarnation file`);
  }
  if (await io.mkdirp(dir)) await io.fsyncDir(dirname(dir));
  const incarnation = randomBytes(8).toString("hex");
  const tmp = join(dir, `${incarnationFileName}.tmp`);
  const h = await io.open(tmp, "createOrTruncate");
  try {
    const buf = Buffer.from(incarnation, "latin1");
    await writeFully(h, buf, buf.length, 0);
    await h.sync();
  } finally {
    await h.close();
  }
  await io.rename(tmp, join(dir, incarnationFileName));
  await io.fsyncDir(dir);
  log.info({ dir, incarnation }, "created ingress WAL incarnation");
  return incarnation;
}
