// A partition log for move-source unit tests that only records whether it is
// frozen (commits, reads and the dedup floor are the real log's business,
// tested there).
import type { OpenedPartitionLog } from "../log/partition-log.ts";

export function fakeFrozenLog(): { log: OpenedPartitionLog; state: { frozen: boolean } } {
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
    stats: () => ({ highWatermark: 3, oldestOffset: 0 }),
    segmentExtents: () => [{ base: 0, bytes: 10 }],
    readSegmentBytes: async () => null,
    committedSeqs: () => new Map<string, number>(),
  } as unknown as OpenedPartitionLog;
  return { log, state };
}
