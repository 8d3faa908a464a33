// One (topic, partition, group) queue: the pure lease state plus the
// partition log it hands out records from, and the durable frontier.
// Opened lazily by the manager; `epoch` is new at every open.

import type { ConsumerQueueState, QueueLimits } from "../core/consumer-state.ts";
import type { StoredRecord } from "../core/records.ts";
import { isLogError } from "../log/log-errors.ts";
import type { PartitionLog } from "../log/types.ts";
import { writeFrontier } from "./frontier-file.ts";

export interface TakeLeased {
  kind: "leased";
  record: StoredRecord;
  nonce: number;
  redelivery: boolean;
}

export type TakeResult =
  | TakeLeased
  | { kind: "empty" }
  | { kind: "in-flight-full" }
  | { kind: "acked-ahead-full" };

export interface QueueEvents {
  /** Offsets the log could not produce (corrupt frames) that were settled. */
  corrupt(count: number): void;
  /** Offsets retention removed before they were acked. */
  expired(count: number): void;
  persistFailed(err: unknown): void;
}

export class PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  readonly group: string;
  /** Partition directory (data/topics/<t>/pNNNNN). */
  readonly dir: string;
  readonly epoch: string;
  readonly state: ConsumerQueueState;
  readonly log: PartitionLog;
  /** Frontier value last written durably (or read at open). */
  persisted: number;
  /** Set when a take was refused by a cap, so the next settle wakes waiters. */
  blocked = false;
  /** Set when the group or topic was deleted: nothing is persisted any more. */
  dropped = false;
  #writing: Promise<void> | undefined;
  readonly #events: QueueEvents;
  readonly #maxSkips: number;
  readonly #readMaxBytes: number;

  constructor(o: {
    topic: string;
    partition: number;
    group: string;
    dir: string;
    epoch: string;
    state: ConsumerQueueState;
    log: PartitionLog;
    persisted: number;
    events: QueueEvents;
    maxSkips: number;
    readMaxBytes: number;
  }) {
    this.topic = o.topic;
    this.partition = o.partition;
    this.group = o.group;
    this.dir = o.dir;
    this.epoch = o.epoch;
    this.state = o.state;
    this.log = o.log;
    this.persisted = o.persisted;
    this.#events = o.events;
    this.#maxSkips = o.maxSkips;
    this.#readMaxBytes = o.readMaxBytes;
  }

  /**
   * Leases the lowest free offset and reads its record. Offsets the log
   * skips (corrupt frames) are settled as corrupt and the next is tried, at
   * most maxSkips times per call.
   */
  async take(nowMs: number, limits: QueueLimits): Promise<TakeResult> {
    for (let attempt = 0; attempt < this.#maxSkips; attempt++) {
      const st = this.log.stats();
      if (st.oldestOffset > this.state.committed) {
        const skipped = this.state.skipTo(st.oldestOffset);
        if (skipped > 0) this.#events.expired(skipped);
      }
      const r = this.state.lease(nowMs, st.highWatermark, limits);
      if (r.kind !== "leased") {
        if (r.kind !== "empty") this.blocked = true;
        return r;
      }
      let record: StoredRecord | undefined;
      try {
        [record] = await this.log.read(r.offset, 1, this.#readMaxBytes);
      } catch (err) {
        this.state.nack(r.offset, r.nonce);
        // Retention removed it between stats() and read(): skip forward next round.
        if (isLogError(err, "OFFSET_EXPIRED")) continue;
        throw err;
      }
      if (record === undefined) {
        this.state.nack(r.offset, r.nonce);
        return { kind: "empty" };
      }
      if (record.offset !== r.offset) {
        this.state.markCorrupt(r.offset, r.nonce, record.offset);
        this.#events.corrupt(record.offset - r.offset);
        continue;
      }
      // The lease may have been dropped while reading (retention skip); try again.
      if (!this.state.isLive(r.offset, r.nonce)) continue;
      return { kind: "leased", record, nonce: r.nonce, redelivery: r.redelivery };
    }
    return { kind: "empty" };
  }

  /** Starts a durable write of the frontier when it moved and none is in flight. */
  flush(): Promise<void> {
    if (this.#writing !== undefined) return this.#writing;
    const value = this.state.committed;
    if (this.dropped || value === this.persisted) return Promise.resolve();
    this.#writing = writeFrontier(this.dir, this.group, value)
      .then(
        () => {
          this.persisted = value;
        },
        (err: unknown) => {
          if (!this.dropped) this.#events.persistFailed(err);
        },
      )
      .finally(() => {
        this.#writing = undefined;
      });
    return this.#writing;
  }

  /** Resolves once no frontier write is in flight. */
  async idle(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }
}
