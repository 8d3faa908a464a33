// After a pass: forget the parked records that are done now, then park what
// the pass left undone if its read could not reach the WAL's end (a stalled
// lane would otherwise pin the checkpoint and, past the lookahead, stop every
// lane of the node). Parked records are durable in the parked store
// (parked-store.ts), so they count as done for the checkpoint, never before
// park() resolved.

import { type ReadStop, recordsToPark } from "../core/dispatch-plan.ts";
import type { WalRecord } from "../core/records.ts";
import type { ParkedStore } from "./parked-store.ts";
import type { DispatchLogger } from "./types.ts";

export interface ParkingOutcome {
  /** WAL seqs parked by this call (now done for the checkpoint). */
  parkedSeqs: number[];
  /** Records that needed parking but did not fit the parked store (they stay in the WAL). */
  refusedRecords: number;
  /** Parking itself failed (an I/O error); they stay in the WAL. */
  failed: boolean;
}

export async function releaseAndPark(
  parked: ParkedStore,
  logger: DispatchLogger,
  pass: {
    stoppedBy: ReadStop;
    records: readonly WalRecord[];
    doneSeqs: readonly number[];
    aborted: boolean;
  },
): Promise<ParkingOutcome> {
  const nothing: ParkingOutcome = { parkedSeqs: [], refusedRecords: 0, failed: false };
  const releasable = pass.doneSeqs.filter((s) => parked.has(s));
  if (releasable.length > 0) {
    try {
      await parked.release(releasable);
    } catch (err) {
      // The records are done; a file left behind only re-sends them after a restart (deduped).
      logger.warn({ err, records: releasable.length }, "could not delete a parked file");
    }
  }
  const done = new Set(pass.doneSeqs);
  const toPark = recordsToPark({
    stoppedBy: pass.stoppedBy,
    records: pass.records,
    isDone: (s) => done.has(s),
    isParked: (s) => parked.has(s),
  });
  if (toPark.length === 0 || pass.aborted) return nothing;
  let bytes = 0;
  for (const r of toPark) bytes += r.key.length + r.payload.length;
  if (!parked.hasRoom(bytes)) {
    logger.warn(
      { records: toPark.length, parkedBytes: parked.bytes },
      "parked store full; stuck records stay in the WAL (dispatch reaches only the lookahead past them)",
    );
    return { ...nothing, refusedRecords: toPark.length };
  }
  try {
    await parked.park(toPark);
  } catch (err) {
    logger.error({ err, records: toPark.length }, "parking records failed; they stay in the WAL");
    return { ...nothing, failed: true };
  }
  logger.info({ records: toPark.length, parked: parked.size }, "parked records of stalled lanes");
  return { ...nothing, parkedSeqs: toPark.map((r) => r.seq) };
}
