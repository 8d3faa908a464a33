// An in-memory IngressWal for tests: appends are durable at once (listeners
// fire synchronously, as the real WAL does after a group commit), reads honour
// maxRecords/maxBytes, and the checkpoint is checked for going backwards or
// past the end. Faults are switched on by the test.

import type { WalRecord, WalRecordInput } from "../core/records.ts";
import type { IngressWal, WalStats } from "../wal/types.ts";

export interface FakeWal extends IngressWal {
  /** Every setCheckpoint value, in call order. */
  readonly checkpoints: number[];
  readonly readCalls: number;
  /** Makes the next reads / checkpoint writes reject (until set back to null). */
  failReads: Error | null;
  failCheckpoint: Error | null;
  /** Removes records as if their frames were dropped as corrupt at recovery. */
  dropSeqs(seqs: readonly number[]): void;
  /** Sync helper: appends `n` records for (topic, partition) with keys k<seq>. */
  put(topic: string, partition: number, n?: number, payloadBytes?: number): number[];
  record(seq: number): WalRecord | undefined;
}

export function createFakeWal(incarnation = "0123456789abcdef"): FakeWal {
  const records: WalRecord[] = []; // sorted by seq
  const listeners: Array<() => void> = [];
  let nextSeq = 1;
  let checkpoint = 1;
  let readCalls = 0;
  let corrupt = 0;

  const appendNow = (input: readonly WalRecordInput[]): { firstSeq: number; lastSeq: number } => {
    const firstSeq = nextSeq;
    for (const r of input) records.push({ ...r, seq: nextSeq++ });
    for (const l of listeners) l();
    return { firstSeq, lastSeq: nextSeq - 1 };
  };

  const wal: FakeWal = {
    incarnation,
    checkpoints: [],
    get readCalls() {
      return readCalls;
    },
    failReads: null,
    failCheckpoint: null,

    async append(input) {
      return appendNow(input);
    },

    async read(fromSeq, maxRecords, maxBytes) {
      readCalls++;
      if (wal.failReads !== null) throw wal.failReads;
      const out: WalRecord[] = [];
      let bytes = 0;
      for (const r of records) {
        if (r.seq < fromSeq) continue;
        const size = r.key.length + r.payload.length;
        if (out.length >= maxRecords || (out.length > 0 && bytes + size > maxBytes)) break;
        out.push(r);
        bytes += size;
      }
      return out;
    },

    async setCheckpoint(seq) {
      if (wal.failCheckpoint !== null) throw wal.failCheckpoint;
      if (seq < checkpoint) throw new Error(`checkpoint moved back: ${checkpoint} -> ${seq}`);
      if (seq > nextSeq) throw new Error(`checkpoint ${seq} past the end (${nextSeq})`);
      checkpoint = seq;
      wal.checkpoints.push(seq);
      // Compaction: records below the checkpoint are gone.
      while (records.length > 0 && records[0]!.seq < checkpoint) records.shift();
    },

    stats(): WalStats {
      return {
        incarnation,
        nextSeq,
        checkpoint,
        pendingRecords: nextSeq - checkpoint,
        segments: 1,
        diskBytes: records.reduce((n, r) => n + r.key.length + r.payload.length, 0),
        corruptFrames: corrupt,
        poisoned: false,
      };
    },

    onDurable(listener) {
      listeners.push(listener);
    },

    async close() {},

    dropSeqs(seqs) {
      const drop = new Set(seqs);
      for (let i = records.length - 1; i >= 0; i--) {
        if (drop.has(records[i]!.seq)) {
          records.splice(i, 1);
          corrupt++;
        }
      }
    },

    put(topic, partition, n = 1, payloadBytes = 8) {
      const input: WalRecordInput[] = [];
      for (let i = 0; i < n; i++) {
        input.push({
          topic,
          partition,
          key: Buffer.from(`k${nextSeq + i}`),
          createdMs: 0,
          payload: Buffer.alloc(payloadBytes, 0x61),
        });
      }
      const { firstSeq, lastSeq } = appendNow(input);
      return Array.from({ length: lastSeq - firstSeq + 1 }, (_, i) => firstSeq + i);
    },

    record(seq) {
      return records.find((r) => r.seq === seq);
    },
  };
  return wal;
}
