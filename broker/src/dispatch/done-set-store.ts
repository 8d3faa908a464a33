// The dispatcher's done-set on disk: the seqs above the WAL checkpoint that
// are already done (committed, rerouted, discarded, parked). The checkpoint
// only moves over contiguous done seqs, so while one held lane pins it the
// done seqs above it used to be memory only. After a crash they were
// dispatched again: a committed record whose owner was Down by then was
// rerouted to a sibling, a rerouted one rerouted a second time, each a copy
// under a new seq that no dedup can recognise (simulation finding F1).
//
// The dispatcher saves the set at the end of every pass that changed it, in
// the same place it writes the checkpoint, so a crash re-dispatches at most
// what the last pass finished, not everything done since the checkpoint
// stuck. `<dataDir>/dispatch/done-set`, JSON
// `{"version":1,"incarnation":"<WAL incarnation>","ranges":[[from,to),...]}`,
// replaced with temp file → fdatasync → rename → fsync(dir).
//
// Reading it back can only make the dispatcher skip seqs it really finished:
// a set of another WAL incarnation (the WAL was reset) or one that cannot be
// parsed is ignored (re-dispatch: duplicates at worst, never loss), and
// ranges are clipped to [checkpoint, next seq).

import { mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { clipDoneSet, type SeqRange, type SkipSet } from "../core/dispatch-plan.ts";

export { clipDoneSet };

export const doneSetFileName = "done-set";

export interface DoneSetStore {
  /** What the process before saved, clipped to [checkpoint, nextSeq) of the open WAL. */
  readonly initial: SkipSet;
  /** Durably replaces the saved set. */
  save(skip: SkipSet): Promise<void>;
}

export interface DoneSetStoreOptions {
  dir: string;
  /** The WAL incarnation the seqs belong to. */
  incarnation: string;
  checkpoint: number;
  nextSeq: number;
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export function encodeDoneSet(incarnation: string, skip: SkipSet): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, incarnation, ranges: skip.map((r) => [r.from, r.to]) }));
}

export type DecodedDoneSet =
  | { ok: true; incarnation: string; ranges: SeqRange[] }
  | { ok: false; why: string };

export function decodeDoneSet(bytes: Buffer): DecodedDoneSet {
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString("utf8"));
  } catch {
    return { ok: false, why: "not JSON" };
  }
  const o = v as { version?: unknown; incarnation?: unknown; ranges?: unknown };
  if (typeof o !== "object" || o === null || o.version !== 1) return { ok: false, why: "not version 1" };
  if (typeof o.incarnation !== "string") return { ok: false, why: "no incarnation" };
  if (!Array.isArray(o.ranges)) return { ok: false, why: "no ranges" };
  const ranges: SeqRange[] = [];
  for (const r of o.ranges) {
    const [from, to] = Array.isArray(r) ? (r as unknown[]) : [];
    if (
      !Number.isSafeInteger(from) ||
      !Number.isSafeInteger(to) ||
      (from as number) < 1 ||
      (to as number) <= (from as number)
    )
      return { ok: false, why: "a range is not [from, to) of positive integers" };
    ranges.push({ from: from as number, to: to as number });
  }
  return { ok: true, incarnation: o.incarnation, ranges };
}

export async function openDoneSetStore(o: DoneSetStoreOptions): Promise<DoneSetStore> {
  await mkdir(o.dir, { recursive: true });
  const path = join(o.dir, doneSetFileName);
  let initial: SkipSet = [];
  const bytes = await readFile(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  if (bytes !== undefined) {
    const d = decodeDoneSet(bytes);
    if (!d.ok)
      o.logger.error(
        { path, why: d.why },
        "done-set unreadable; its seqs are dispatched again (owners dedup)",
      );
    else if (d.incarnation !== o.incarnation)
      o.logger.warn({ path }, "done-set belongs to another WAL incarnation; ignored");
    else initial = clipDoneSet(d.ranges, o.checkpoint, o.nextSeq);
  }
  return {
    initial,
    async save(skip) {
      const tmp = `${path}.tmp`;
      const file = await open(tmp, "w", 0o644);
      try {
        await file.writeFile(encodeDoneSet(o.incarnation, skip));
        await file.datasync();
      } finally {
        await file.close();
      }
      await rename(tmp, path);
      const d = await open(o.dir, "r");
      try {
        await d.sync();
      } finally {
        await d.close();
      }
    },
  };
}
