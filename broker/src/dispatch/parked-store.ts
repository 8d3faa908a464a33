// The parked-records store: where the dispatcher moves WAL records of lanes
// that cannot make progress (a held owner, a failing partition log, an
// unconfirmed deletion) so the WAL checkpoint can pass them and every other
// lane keeps flowing. `<dataDir>/parked/<incarnation>.<firstSeq>.park` files,
// each a run of WAL frames (same codec and CRC-32C as the ingress WAL),
// keeping every record's original (incarnation, seq), so the owner's dedup
// still recognises a re-send.
//
// Crash safety (the dispatcher's part is in pass.ts):
//  - park(): write <name>.tmp → fdatasync → rename → fsync(dir); only then
//    may the dispatcher count the seqs done and move the checkpoint past
//    them. A crash before the rename leaves a .tmp (removed at open) and the
//    records still in the WAL above the checkpoint; a crash after it but
//    before the checkpoint write leaves them in both places, and open()
//    ignores parked records at or above the WAL checkpoint (the WAL still
//    dispatches them), so each record is dispatched from exactly one place.
//  - release(): a file is deleted once all its records are done. A crash
//    before the unlink re-sends committed records, which the owner's
//    (incarnation, seq) dedup drops.
//
// Parked records are kept in memory too (they are re-planned every pass);
// maxBytes bounds that: past it nothing more is parked and dispatch behaves
// as before parking existed (the lookahead stall), which is counted.

import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { WalRecord } from "../core/records.ts";
import { checkWalFrame, decodeCheckedWalFrame, encodeWalFrames } from "../core/wal-codec.ts";
import { nodeLogIo } from "../log/log-io.ts";

/** Memory bound of the parked store (its records are kept in memory to be re-planned every pass). */
export const defaultParkedMaxBytes = 256 * 1024 * 1024;

export interface ParkedStore {
  /** Every parked record, in seq order. */
  records(): readonly WalRecord[];
  has(seq: number): boolean;
  readonly size: number;
  readonly bytes: number;
  /** Whether `bytes` more fit under the memory bound. */
  hasRoom(bytes: number): boolean;
  /** Durable (file fsynced, renamed, directory fsynced) before it resolves. */
  park(records: readonly WalRecord[]): Promise<void>;
  /** Forgets done records; deletes files with nothing left. */
  release(seqs: readonly number[]): Promise<void>;
}

interface ParkFile {
  name: string;
  live: Set<number>;
  /** Has frames past a damaged one: never deleted (what follows the damage was not read). */
  damaged?: true;
}

export interface ParkedStoreOptions {
  dir: string;
  incarnation: string;
  /**
   * The first seq the WAL holds at or above its checkpoint at open (its next
   * seq when it holds none): parked records at or above it are still in the
   * WAL. Not the checkpoint itself: a checkpoint reset below deleted segments
   * would make parked records look re-dispatchable from a WAL that lost them.
   */
  walCheckpoint: number;
  maxBytes: number;
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

const recordBytes = (r: WalRecord): number => r.key.length + r.payload.length + r.topic.length + 64;

export async function openParkedStore(o: ParkedStoreOptions): Promise<ParkedStore> {
  await mkdir(o.dir, { recursive: true });
  const bySeq = new Map<number, WalRecord>();
  const files: ParkFile[] = [];
  const fileOf = new Map<number, ParkFile>();
  let bytes = 0;
  for (const name of (await readdir(o.dir)).sort()) {
    if (name.endsWith(".tmp")) {
      await rm(join(o.dir, name), { force: true }); // a park that never completed: the WAL has them
      continue;
    }
    if (!name.endsWith(".park")) continue;
    if (!name.startsWith(`${o.incarnation}.`)) {
      o.logger.error({ file: name }, "parked records of another WAL incarnation are left alone");
      continue;
    }
    const buf = await readFile(join(o.dir, name));
    const f: ParkFile = { name, live: new Set() };
    for (let at = 0; at < buf.length; ) {
      const c = checkWalFrame(buf, at, buf.length);
      if (c.kind !== "ok") {
        o.logger.error(
          { file: name, at, check: c.kind },
          "parked file damaged after this point; the file is kept for recovery",
        );
        f.damaged = true;
        break;
      }
      const r = decodeCheckedWalFrame(buf, at);
      at += c.frameBytes;
      if (r.seq >= o.walCheckpoint || bySeq.has(r.seq)) continue;
      bySeq.set(r.seq, r);
      f.live.add(r.seq);
      fileOf.set(r.seq, f);
      bytes += recordBytes(r);
    }
    if (f.live.size === 0 && f.damaged !== true) await rm(join(o.dir, name), { force: true });
    else if (f.live.size > 0) files.push(f);
  }
  let sorted: WalRecord[] | undefined;

  return {
    records() {
      sorted ??= [...bySeq.values()].sort((a, b) => a.seq - b.seq);
      return sorted;
    },
    has: (seq) => bySeq.has(seq),
    get size() {
      return bySeq.size;
    },
    get bytes() {
      return bytes;
    },
    hasRoom: (more) => bytes + more <= o.maxBytes,

    async park(records) {
      const fresh = records.filter((r) => !bySeq.has(r.seq));
      if (fresh.length === 0) return;
      const name = `${o.incarnation}.${String(fresh[0]!.seq).padStart(20, "0")}.park`;
      const path = join(o.dir, name);
      const tmp = `${path}.tmp`;
      const body = Buffer.concat(fresh.map((r) => encodeWalFrames([r], r.seq)));
      const h = await open(tmp, "w");
      try {
        await h.writeFile(body);
        await h.datasync();
      } finally {
        await h.close();
      }
      await rename(tmp, path);
      await nodeLogIo.fsyncDir(o.dir);
      const f: ParkFile = { name, live: new Set() };
      for (const r of fresh) {
        bySeq.set(r.seq, r);
        f.live.add(r.seq);
        fileOf.set(r.seq, f);
        bytes += recordBytes(r);
      }
      files.push(f);
      sorted = undefined;
    },

    async release(seqs) {
      const emptied: ParkFile[] = [];
      for (const s of seqs) {
        const r = bySeq.get(s);
        if (r === undefined) continue;
        bySeq.delete(s);
        bytes -= recordBytes(r);
        const f = fileOf.get(s)!;
        fileOf.delete(s);
        f.live.delete(s);
        if (f.live.size === 0) emptied.push(f);
        sorted = undefined;
      }
      if (emptied.length === 0) return;
      for (const f of emptied) {
        if (f.damaged !== true) await rm(join(o.dir, f.name), { force: true });
        files.splice(files.indexOf(f), 1);
      }
      await nodeLogIo.fsyncDir(o.dir);
    },
  };
}
