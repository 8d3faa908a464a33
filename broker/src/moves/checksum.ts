// Checksums that prove a partition copy equals its original (partition
// moves): CRC-32C over a segment's first `bytes` bytes, read in chunks from
// whatever holds the segment (a live partition log, or a staged file), and
// the pure comparison of two such lists. A move never trusts a number the
// other side computed about itself (an HWM, a length): only bytes that
// checksum the same on both sides count as copied.

import { crc32c } from "@node-rs/crc32";

const readChunkBytes = 1024 * 1024;

export interface SegmentChecksum {
  base: number;
  bytes: number;
  /** False when the segment is missing or has fewer than `bytes` bytes. */
  found: boolean;
  crc32c: number;
}

/** Reads [position, position+length) of a segment; shorter (or null) when it has less. */
export type SegmentReader = (base: number, position: number, length: number) => Promise<Buffer | null>;

/** CRC-32C of the chunk a MoveFetch carries. */
export function chunkChecksum(data: Uint8Array): number {
  return crc32c(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

/** CRC-32C of the first `bytes` bytes of segment `base`, or found=false when it has fewer. */
export async function segmentChecksum(
  read: SegmentReader,
  base: number,
  bytes: number,
): Promise<SegmentChecksum> {
  let crc = 0;
  let pos = 0;
  while (pos < bytes) {
    const want = Math.min(readChunkBytes, bytes - pos);
    const buf = await read(base, pos, want);
    if (buf === null || buf.length === 0) return { base, bytes, found: false, crc32c: 0 };
    crc = crc32c(buf, crc);
    pos += buf.length;
  }
  return { base, bytes, found: true, crc32c: crc };
}

export async function segmentChecksums(
  read: SegmentReader,
  segments: ReadonlyArray<{ base: number; bytes: number }>,
): Promise<SegmentChecksum[]> {
  const out: SegmentChecksum[] = [];
  for (const s of segments) out.push(await segmentChecksum(read, s.base, s.bytes));
  return out;
}

/**
 * Why `copy` does not hold the same bytes as `original`, or undefined when
 * every segment of `original` is in `copy` with the same length and CRC.
 * `retainedFrom` (the copy's oldest offset) excuses segments below it that
 * the copy's retention removed since (segment bases are identical in a
 * byte-for-byte copy, so a whole segment is either there or not).
 */
export function checksumMismatch(
  original: readonly SegmentChecksum[],
  copy: readonly SegmentChecksum[],
  retainedFrom = 0,
): string | undefined {
  const byBase = new Map(copy.map((c) => [c.base, c]));
  for (const o of original) {
    if (!o.found) return `segment ${o.base}: the original has fewer than ${o.bytes} bytes`;
    const c = byBase.get(o.base);
    if (c === undefined || !c.found) {
      if (o.base < retainedFrom) continue;
      return `segment ${o.base}: missing from the copy (or shorter than ${o.bytes} bytes)`;
    }
    if (c.bytes !== o.bytes) return `segment ${o.base}: ${c.bytes} bytes checked, ${o.bytes} expected`;
    if (c.crc32c !== o.crc32c)
      return `segment ${o.base}: CRC-32C ${c.crc32c.toString(16)} != ${o.crc32c.toString(16)} over ${o.bytes} bytes`;
  }
  return undefined;
}
