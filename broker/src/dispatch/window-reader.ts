// Reads one pass's window from the WAL: undone records from the checkpoint,
// skipping done runs, stopping at the window size, the pass byte budget or
// the lookahead limit.

import { type SeqRange, type SkipSet, skipHas, skipNextFree } from "../core/dispatch-plan.ts";
import type { WalRecord } from "../core/records.ts";
import type { IngressWal } from "../wal/types.ts";

export interface WindowRequest {
  /** Where to start (the checkpoint). */
  from: number;
  /** Exclusive: never read at or past this seq (lookahead bound). */
  limit: number;
  windowRecords: number;
  skip: SkipSet;
  /** maxBytes of one wal.read call. */
  maxReadBytes: number;
  /** Stop once this many bytes of undone records are held in memory. */
  maxPassBytes: number;
}

export interface WindowRead {
  /** Undone records in seq order. */
  records: WalRecord[];
  /**
   * Seqs the WAL skipped (frames dropped as corrupt at recovery): nothing to
   * dispatch, so they count as done, or the checkpoint could never pass them.
   */
  absent: SeqRange[];
  stoppedBy: "end" | "window" | "bytes" | "limit";
  bytes: number;
}

export async function readWindow(
  wal: Pick<IngressWal, "read" | "stats">,
  req: WindowRequest,
): Promise<WindowRead> {
  const records: WalRecord[] = [];
  const absent: SeqRange[] = [];
  let bytes = 0;
  let cursor = skipNextFree(req.skip, req.from);
  // Each read returns at least one record or ends the loop, and the cursor
  // only moves forward, so the loop is bounded by limit - from.
  while (cursor < req.limit) {
    // Read a whole window each time (not just what is missing) so a
    // fragmented skip-set costs at most lookahead+1 reads, not one per gap.
    const want = Math.min(req.windowRecords, req.limit - cursor);
    // Taken before the read: every seq below it was durable when the read
    // started, so one the read does not return does not exist (a frame
    // dropped at recovery, or a torn tail's seq that is never reused).
    const durableEnd = wal.stats().nextSeq;
    const got = await wal.read(
      cursor,
      want,
      Math.min(req.maxReadBytes, Math.max(1, req.maxPassBytes - bytes)),
    );
    if (got.length === 0) {
      const end = Math.min(durableEnd, req.limit);
      if (end > cursor) absent.push({ from: cursor, to: end });
      return { records, absent, stoppedBy: "end", bytes };
    }
    let expect = cursor;
    for (const r of got) {
      if (r.seq < expect) continue; // defensive: never re-handle a seq within one read
      if (r.seq >= req.limit) {
        // Seqs below a durable record the read skipped do not exist, up to the limit too.
        if (req.limit > expect) absent.push({ from: expect, to: req.limit });
        return { records, absent, stoppedBy: "limit", bytes };
      }
      if (r.seq > expect) absent.push({ from: expect, to: r.seq });
      expect = r.seq + 1;
      if (skipHas(req.skip, r.seq)) continue;
      records.push(r);
      bytes += r.key.length + r.payload.length;
      if (records.length >= req.windowRecords) return { records, absent, stoppedBy: "window", bytes };
      if (bytes >= req.maxPassBytes) return { records, absent, stoppedBy: "bytes", bytes };
    }
    cursor = skipNextFree(req.skip, expect);
  }
  return { records, absent, stoppedBy: "limit", bytes };
}
