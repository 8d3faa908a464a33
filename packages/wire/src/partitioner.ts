// Picks the partition of a produced record (ARCHITECTURE.md §3: hash /
// rotate / pinned). The broker uses it at ingress and the client to send a
// keyed record to the partition the broker would pick. Pure: the rotator's
// counter lives in the object the caller owns, never in module state.

/** FNV-1a 32-bit offset basis and prime (the values Go's hash/fnv uses). */
const fnvOffsetBasis32 = 0x811c9dc5;
const fnvPrime32 = 0x01000193;

/** FNV-1a over the bytes, as an unsigned 32-bit integer (matches narad-go's fnv.New32a). */
export function fnv1a32(bytes: Uint8Array): number {
  let hash = fnvOffsetBasis32;
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i]!;
    // Math.imul keeps the multiply in 32 bits; >>> 0 makes it unsigned.
    hash = Math.imul(hash, fnvPrime32) >>> 0;
  }
  return hash;
}

function assertPartitions(partitions: number): void {
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  }
}

/** Partition of a keyed record: FNV-1a of the key bytes mod the partition count. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  assertPartitions(partitions);
  return fnv1a32(key) % partitions;
}

/** Spreads unkeyed records over partitions in turn. One per ingress node (or per topic). */
export interface Rotator {
  next(partitions: number): number;
}

/** A rotating counter; `start` lets callers stagger nodes so they do not all begin at partition 0. */
export function createRotator(start = 0): Rotator {
  let counter = Math.max(0, Math.trunc(start));
  return {
    next(partitions: number): number {
      assertPartitions(partitions);
      const p = counter % partitions;
      // Wrap well below 2^53 so the counter never loses integer precision.
      counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
      return p;
    },
  };
}

/** The key narad-go generates for a keyless produce: `key-<base36 counter>`. */
export function generateKey(counter: number): string {
  if (!Number.isSafeInteger(counter) || counter < 0) {
    throw new RangeError(`key counter must be a non-negative safe integer, got ${counter}`);
  }
  return "key-" + counter.toString(36);
}

export type PartitionChoice =
  | { ok: true; partition: number; how: "pinned" | "hash" | "rotate" }
  | { ok: false; reason: string };

/**
 * The ingress rule: an explicit pin wins (and must be in range), then the key
 * hash, then the rotator. Returns a reason instead of throwing so the HTTP
 * layer can turn it into a 400.
 */
export function choosePartition(
  input: { pinned?: number | undefined; key?: Uint8Array | undefined },
  partitions: number,
  rotator: Rotator,
): PartitionChoice {
  assertPartitions(partitions);
  if (input.pinned !== undefined) {
    if (!Number.isInteger(input.pinned) || input.pinned < 0 || input.pinned >= partitions) {
      return { ok: false, reason: `partition ${input.pinned} is out of range [0, ${partitions})` };
    }
    return { ok: true, partition: input.pinned, how: "pinned" };
  }
  if (input.key !== undefined && input.key.length > 0) {
    return { ok: true, partition: partitionForKey(input.key, partitions), how: "hash" };
  }
  return { ok: true, partition: rotator.next(partitions), how: "rotate" };
}
