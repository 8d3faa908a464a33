// Idempotent-producer sequence and epoch checks of one partition (pure: no
// I/O, no clock of its own). The partition owner asks `check` for every
// stamped record before it appends anything, and calls `commit` for each one
// it appended; the answer the producer gets is built from the verdicts.
//
// Per producer id the state is the current epoch, the last committed seq and
// the results (offset + content fingerprint) of the latest `maxBatches`
// batches. A batch is a run of one producer's records committed together in
// one commit call with consecutive seqs and offsets.
//
// Rules for a record with stamp (id, epoch, seq) and content fingerprint f:
//  - epoch below the producer's epoch here, or below the epoch the durable
//    producer registry knows (`registryEpoch`): fenced;
//  - unknown producer here (never wrote to this partition, or evicted): fresh
//    only at seq 0, else out of order (expected 0): a producer whose state
//    was evicted gets out_of_order_sequence and must re-initialise;
//  - epoch above the current one: fresh when seq is 0 (a new instance starts
//    at 0), else out of order;
//  - seq == last + 1: fresh;
//  - seq <= last, remembered with the same fingerprint: duplicate, answered
//    with the original offset (nothing is appended);
//  - anything else (a gap, an older seq no longer remembered, a remembered
//    seq with other content — e.g. an identity reused by a second instance):
//    out of order.
// `check` sees the staged state of the records already accepted in the same
// commit (via `stage`), so a batch is checked record by record in order.

export interface SequenceStamp {
  id: string;
  epoch: number;
  seq: number;
}

export type SequenceVerdict =
  | { kind: "fresh" }
  | { kind: "duplicate"; offset: number }
  /** A retry of a record accepted earlier in the same commit (its offset is known once appended). */
  | { kind: "duplicate_in_batch"; index: number }
  | { kind: "fenced"; currentEpoch: number }
  | { kind: "out_of_order"; expectedSeq: number; epoch: number };

interface BatchResult {
  firstSeq: number;
  firstOffset: number;
  fingerprints: number[];
  /** Commit call that wrote it (batches of different commits never merge, -1 = rebuilt). */
  commitId: number;
}

interface ProducerState {
  epoch: number;
  lastSeq: number;
  lastOffset: number;
  batches: BatchResult[];
  lastUsedMs: number;
}

export interface ProducerSequenceLimits {
  /** Batches whose results are kept per producer (default 5). */
  maxBatches: number;
  /** Records whose results are kept per producer, across those batches (default 10,000). */
  maxRememberedRecords: number;
  /** Producers kept per partition; the least recently used is evicted beyond it (default 10,000). */
  maxProducers: number;
  /** A producer idle this long is evicted by `evictIdle` (default 7 days). */
  idleEvictMs: number;
}

export const defaultProducerSequenceLimits: ProducerSequenceLimits = {
  maxBatches: 5,
  maxRememberedRecords: 10_000,
  maxProducers: 10_000,
  idleEvictMs: 7 * 24 * 3600_000,
};

function outOfOrder(st: { epoch: number; lastSeq: number }): SequenceVerdict {
  return { kind: "out_of_order", expectedSeq: st.lastSeq + 1, epoch: st.epoch };
}

export class ProducerSequences {
  readonly #limits: ProducerSequenceLimits;
  readonly #producers = new Map<string, ProducerState>();
  #evicted = 0;

  constructor(limits: Partial<ProducerSequenceLimits> = {}) {
    this.#limits = { ...defaultProducerSequenceLimits, ...limits };
  }

  get size(): number {
    return this.#producers.size;
  }

  /** Producers evicted so far (count or idle time). */
  get evicted(): number {
    return this.#evicted;
  }

  epochOf(id: string): number | undefined {
    return this.#producers.get(id)?.epoch;
  }

  /** The verdict for a record, without changing state. */
  check(s: SequenceStamp, fingerprint: number, registryEpoch?: number): SequenceVerdict {
    const w = this.#producers.get(s.id);
    if (registryEpoch !== undefined && s.epoch < registryEpoch)
      return { kind: "fenced", currentEpoch: registryEpoch };
    if (w === undefined)
      return s.seq === 0 ? { kind: "fresh" } : { kind: "out_of_order", expectedSeq: 0, epoch: s.epoch };
    if (s.epoch < w.epoch) return { kind: "fenced", currentEpoch: w.epoch };
    if (s.epoch > w.epoch) {
      return s.seq === 0 ? { kind: "fresh" } : { kind: "out_of_order", expectedSeq: 0, epoch: s.epoch };
    }
    if (s.seq === w.lastSeq + 1) return { kind: "fresh" };
    if (s.seq <= w.lastSeq) {
      const offset = this.#remembered(w, s.seq, fingerprint);
      if (offset !== undefined) return { kind: "duplicate", offset };
    }
    return { kind: "out_of_order", expectedSeq: w.lastSeq + 1, epoch: w.epoch };
  }

  /**
   * Verdicts for the stamped records of one commit, in order: each record is
   * checked against the state as if the fresh records before it had been
   * committed. Nothing changes until `commit` is called.
   */
  checkBatch(
    items: ReadonlyArray<{ stamp: SequenceStamp; fingerprint: number; registryEpoch?: number | undefined }>,
  ): SequenceVerdict[] {
    const staged = new Map<string, { epoch: number; lastSeq: number; seqs: Map<number, [number, number]> }>();
    const out: SequenceVerdict[] = [];
    for (let i = 0; i < items.length; i++) {
      const { stamp: s, fingerprint, registryEpoch } = items[i]!;
      const st = staged.get(s.id);
      let v: SequenceVerdict;
      if (st === undefined) v = this.check(s, fingerprint, registryEpoch);
      else if (registryEpoch !== undefined && s.epoch < registryEpoch)
        v = { kind: "fenced", currentEpoch: registryEpoch };
      else if (s.epoch < st.epoch) v = { kind: "fenced", currentEpoch: st.epoch };
      else if (s.epoch > st.epoch)
        v = s.seq === 0 ? { kind: "fresh" } : { kind: "out_of_order", expectedSeq: 0, epoch: s.epoch };
      else if (s.seq === st.lastSeq + 1) v = { kind: "fresh" };
      else {
        const hit = st.seqs.get(s.seq);
        if (hit !== undefined)
          v = hit[0] === fingerprint ? { kind: "duplicate_in_batch", index: hit[1] } : outOfOrder(st);
        else {
          const before = this.check(s, fingerprint, registryEpoch);
          v = before.kind === "duplicate" ? before : outOfOrder(st);
        }
      }
      if (v.kind === "fresh") {
        const next =
          st !== undefined && st.epoch === s.epoch ? st : { epoch: s.epoch, lastSeq: s.seq, seqs: new Map() };
        next.lastSeq = s.seq;
        next.seqs.set(s.seq, [fingerprint, i]);
        staged.set(s.id, next);
      }
      out.push(v);
    }
    return out;
  }

  /**
   * Records `s` as committed at `offset` (after a "fresh" verdict, or when
   * rebuilding from the log with commitId -1). Records of one commit call
   * with consecutive seqs and offsets form one batch.
   */
  commit(s: SequenceStamp, offset: number, fingerprint: number, commitId: number, nowMs: number): void {
    let w = this.#producers.get(s.id);
    if (w === undefined || s.epoch > w.epoch || (s.epoch === w.epoch && s.seq !== w.lastSeq + 1)) {
      if (w !== undefined && s.epoch < w.epoch) return;
      // New producer, new epoch, or (rebuild / unknown-after-eviction) a jump: start over.
      w = { epoch: s.epoch, lastSeq: s.seq, lastOffset: offset, batches: [], lastUsedMs: nowMs };
      this.#producers.delete(s.id);
      this.#producers.set(s.id, w);
      w.batches.push({ firstSeq: s.seq, firstOffset: offset, fingerprints: [fingerprint], commitId });
      this.#bound();
      return;
    }
    if (s.epoch < w.epoch) return;
    const last = w.batches[w.batches.length - 1];
    if (
      last !== undefined &&
      last.commitId === commitId &&
      w.lastOffset + 1 === offset &&
      last.firstSeq + last.fingerprints.length === s.seq
    ) {
      last.fingerprints.push(fingerprint);
    } else {
      w.batches.push({ firstSeq: s.seq, firstOffset: offset, fingerprints: [fingerprint], commitId });
    }
    w.lastSeq = s.seq;
    w.lastOffset = offset;
    w.lastUsedMs = Math.max(w.lastUsedMs, nowMs);
    // Most recently used last: Map order doubles as the LRU order.
    this.#producers.delete(s.id);
    this.#producers.set(s.id, w);
    this.#trim(w);
  }

  /** Marks a producer used (a duplicate answered from its state), for idle eviction. */
  touch(id: string, nowMs: number): void {
    const w = this.#producers.get(id);
    if (w !== undefined) w.lastUsedMs = Math.max(w.lastUsedMs, nowMs);
  }

  /** Evicts producers idle for longer than idleEvictMs; returns how many. */
  evictIdle(nowMs: number): number {
    let n = 0;
    for (const [id, w] of this.#producers) {
      if (nowMs - w.lastUsedMs > this.#limits.idleEvictMs) {
        this.#producers.delete(id);
        n++;
      }
    }
    this.#evicted += n;
    return n;
  }

  #remembered(w: ProducerState, seq: number, fingerprint: number): number | undefined {
    for (let i = w.batches.length - 1; i >= 0; i--) {
      const b = w.batches[i]!;
      const k = seq - b.firstSeq;
      if (k >= 0 && k < b.fingerprints.length) {
        return b.fingerprints[k] === fingerprint ? b.firstOffset + k : undefined;
      }
    }
    return undefined;
  }

  #trim(w: ProducerState): void {
    while (w.batches.length > this.#limits.maxBatches) w.batches.shift();
    let total = 0;
    for (const b of w.batches) total += b.fingerprints.length;
    while (total > this.#limits.maxRememberedRecords && w.batches.length > 0) {
      const b = w.batches[0]!;
      const drop = Math.min(b.fingerprints.length, total - this.#limits.maxRememberedRecords);
      if (drop === b.fingerprints.length) {
        w.batches.shift();
      } else {
        b.fingerprints.splice(0, drop);
        b.firstSeq += drop;
        b.firstOffset += drop;
      }
      total -= drop;
    }
  }

  #bound(): void {
    while (this.#producers.size > this.#limits.maxProducers) {
      const oldest = this.#producers.keys().next().value;
      if (oldest === undefined) break;
      this.#producers.delete(oldest);
      this.#evicted++;
    }
  }
}
