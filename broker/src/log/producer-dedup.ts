// Idempotent-producer state of one partition: per producerId the current
// epoch and a window of recently committed sequences.
//
// Not contiguity-based: one producer's records may reach the owner through
// different ingress WALs (a retry to another node), so seq 7 can commit
// before seq 6. The window keeps every committed seq in
// (highest - windowSize, highest]; a seq in the window that is committed is a
// duplicate, one in the window that is not is fresh, and one below the
// window is treated as a duplicate (too old to tell; a producer has at most a
// few batches in flight, far fewer than the window).
//
// Epochs: a record with a higher epoch than the producer's current one starts
// a new window (the old epoch is fenced from then on); a lower epoch is
// fenced (dropped and counted).
//
// Rebuilt at open from the 0x04 records of the log (log/recovery.ts), like
// the (incarnation, seq) map.

import type { ProducerStamp } from "../core/records.ts";

export const producerWindowSize = 1024;

export type ProducerVerdict = "fresh" | "duplicate" | "fenced";

interface ProducerWindow {
  epoch: number;
  highest: number;
  /** Committed seqs in (highest - windowSize, highest]. */
  seqs: Set<number>;
}

export class ProducerDedup {
  readonly #windowSize: number;
  readonly #producers = new Map<string, ProducerWindow>();

  constructor(windowSize = producerWindowSize) {
    this.#windowSize = windowSize;
  }

  get size(): number {
    return this.#producers.size;
  }

  /** Current epoch of `id` at this partition, or undefined when unknown. */
  epochOf(id: string): number | undefined {
    return this.#producers.get(id)?.epoch;
  }

  /** What a commit of `s` would be, without changing state. */
  verdict(s: ProducerStamp): ProducerVerdict {
    const w = this.#producers.get(s.id);
    if (w === undefined || s.epoch > w.epoch) return "fresh";
    if (s.epoch < w.epoch) return "fenced";
    if (s.seq > w.highest) return "fresh";
    if (s.seq <= w.highest - this.#windowSize) return "duplicate";
    return w.seqs.has(s.seq) ? "duplicate" : "fresh";
  }

  /** Records `s` as committed (call only for a "fresh" verdict, or at rebuild). */
  commit(s: ProducerStamp): void {
    let w = this.#producers.get(s.id);
    if (w === undefined || s.epoch > w.epoch) {
      w = { epoch: s.epoch, highest: s.seq, seqs: new Set([s.seq]) };
      this.#producers.set(s.id, w);
      return;
    }
    if (s.epoch < w.epoch) return;
    if (s.seq <= w.highest - this.#windowSize) return;
    w.seqs.add(s.seq);
    if (s.seq > w.highest) {
      const oldFloor = w.highest - this.#windowSize;
      w.highest = s.seq;
      const floor = w.highest - this.#windowSize;
      if (floor - oldFloor < w.seqs.size) {
        for (let q = oldFloor + 1; q <= floor; q++) w.seqs.delete(q);
      } else {
        for (const q of w.seqs) if (q <= floor) w.seqs.delete(q);
      }
    }
  }
}
