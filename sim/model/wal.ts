import type { SkipSet } from "../../broker/src/core/dispatch-plan.ts";
// The ingress WAL of one broker: dense seqs from 1, a durable checkpoint,
// an incarnation id carried in every CommitRecord. Everything here survives
// a crash (it models the fsynced files); the dispatcher's skip-set and
// in-doubt marks are memory and live in SimDispatcher instead.

import type { WalRecord, WalRecordInput } from "../../broker/src/core/records.ts";

export class SimWal {
  readonly incarnation: string;
  readonly #records: WalRecord[] = [];
  #checkpoint = 1;
  /** The dispatcher's done-set file (dispatch/done-set-store.ts): done seqs above the checkpoint. */
  doneSet: SkipSet = [];
  doneSetSavedAtMs = Number.NEGATIVE_INFINITY;

  constructor(incarnation: string) {
    this.incarnation = incarnation;
  }

  get nextSeq(): number {
    return this.#records.length + 1;
  }

  get checkpoint(): number {
    return this.#checkpoint;
  }

  get pending(): number {
    return this.nextSeq - this.#checkpoint;
  }

  /** One group commit: all records durable together. */
  append(input: readonly WalRecordInput[]): { firstSeq: number; lastSeq: number } {
    const firstSeq = this.nextSeq;
    for (const r of input) this.#records.push({ ...r, seq: this.nextSeq });
    return { firstSeq, lastSeq: this.nextSeq - 1 };
  }

  /** Records with seq in [from, from + count), as wal.read returns them (compacted ones are gone). */
  read(from: number, count: number): WalRecord[] {
    const start = Math.max(from, this.#checkpoint);
    return this.#records.slice(start - 1, Math.min(this.#records.length, from - 1 + count));
  }

  get(seq: number): WalRecord | undefined {
    return this.#records[seq - 1];
  }

  setCheckpoint(n: number): void {
    if (n < this.#checkpoint || n > this.nextSeq)
      throw new Error(`bad checkpoint ${n} (was ${this.#checkpoint})`);
    this.#checkpoint = n;
  }
}
