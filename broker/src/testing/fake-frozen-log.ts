// A partition log for move-source unit tests that only records whether it is
// frozen (commits, reads and the dedup floor are the real log's business,
// tested there).
import type { OpenedPartitionLog } from "../log/partition-log.ts";

/** What the manifest reports: by default a 3-record log in one 10-byte segment. */
export function fakeFrozenLog(
  shape: { highWatermark: number; segments: Array<{ base: number; bytes: number }> } = {
    highWatermark: 3,
    segments: [{ base: 0, bytes: 10 }],
  },
): { log: OpenedPartitionLog; state: { frozen: boolean } } {
  const state = { frozen: false };
  const log = {
    freeze: async () => {
      state.frozen = true;
    },
    unfreeze: () => {
      state.frozen = false;
    },
    get frozen() {
      return state.frozen;
    },
    stats: () => ({ highWatermark: shape.highWatermark, oldestOffset: 0 }),
    segmentExtents: () => shape.segments,
    readSegmentBytes: async () => null,
    committedSeqs: () => new Map<string, number>(),
  } as unknown as OpenedPartitionLog;
  return { log, state };
}
