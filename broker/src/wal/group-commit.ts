// Group commit: appends that arrive while one write+fdatasync is in flight
// are staged and go out together as the next group — one write and one
// fdatasync per group. The next group starts the moment the previous sync
// returns (or, when idle, in the same tick as the append), so batching adds no
// waiting; a backstop timer re-kicks the loop at least every syncBackstopMs
// while anything is staged.
//
// Invariants:
//   - seqs are assigned at staging, dense and increasing; groups are FIFO
//     prefixes of the staging queue, so the file holds seqs in order.
//   - a caller's promise resolves only after its whole group is durable;
//     once staged an append cannot be withdrawn and gets its true outcome.
//   - the first write/fdatasync failure poisons the committer: that group and
//     every staged or later append reject with WAL_POISONED; nothing is
//     retried (a retried fdatasync can report success for lost pages).
//   - except a full disk: the sink reports DISK_FULL only when the group's
//     bytes never reached an fdatasync and were cut off again. Then that group
//     and every staged append reject with DISK_FULL, the seq counter rewinds
//     to the group's first seq (no seq of them was ever durable, and seqs must
//     stay dense in the file), and later appends are tried again as normal.

import type { WalRecordInput } from "../core/records.ts";
import {
  encodeWalFramesInto,
  walFrameHeaderBytes,
  walRecordInputProblem,
  walRecordPayloadBytes,
} from "../core/wal-codec.ts";
import { WalError, type WalLogger } from "./errors.ts";

export interface GroupPlan {
  /** Start a new segment (named by the group's first seq) before writing. */
  roll: boolean;
  /** Bytes this group may hold; one append is always taken even if larger. */
  capacityBytes: number;
}

/** Where groups go: the segment manager of the ingress WAL. */
export interface GroupSink {
  plan(firstAppendBytes: number): GroupPlan;
  /** Writes the encoded group and fdatasyncs it (rolling first when planned); rejects on any I/O error. */
  commit(buf: Buffer, firstSeq: number, lastSeq: number, roll: boolean): Promise<void>;
  /** The group is durable: publish it (sizes, cache, listeners). Must not throw. */
  durable(buf: Buffer, firstSeq: number, lastSeq: number): void;
}

export interface AppendResult {
  firstSeq: number;
  lastSeq: number;
}

interface Staged {
  records: readonly WalRecordInput[];
  firstSeq: number;
  bytes: number;
  resolve: (r: AppendResult) => void;
  reject: (e: Error) => void;
}

export interface GroupCommitterOptions {
  sink: GroupSink;
  nextSeq: number;
  maxRecordBytes: number;
  syncBackstopMs: number;
  log: WalLogger;
}

export class GroupCommitter {
  readonly #sink: GroupSink;
  readonly #maxRecordBytes: number;
  readonly #backstopMs: number;
  readonly #log: WalLogger;
  #staged: Array<Staged | undefined> = [];
  #head = 0;
  #nextSeq: number;
  /** A group write (or an exclusive section) owns the active segment. */
  #busy = false;
  #kickQueued = false;
  #timer: NodeJS.Timeout | undefined;
  #poison: WalError | undefined;
  #closed = false;
  #idleWaiters: Array<() => void> = [];
  #groups = 0;

  constructor(o: GroupCommitterOptions) {
    this.#sink = o.sink;
    this.#nextSeq = o.nextSeq;
    this.#maxRecordBytes = o.maxRecordBytes;
    this.#backstopMs = o.syncBackstopMs;
    this.#log = o.log;
  }

  get poisoned(): boolean {
    return this.#poison !== undefined;
  }

  /** Next seq to hand out (includes staged, not yet durable appends). */
  get assignedNextSeq(): number {
    return this.#nextSeq;
  }

  /** Groups made durable since open. */
  get groupsCommitted(): number {
    return this.#groups;
  }

  get stagedCount(): number {
    return this.#staged.length - this.#head;
  }

  append(records: readonly WalRecordInput[]): Promise<AppendResult> {
    if (this.#closed) return Promise.reject(new WalError("WAL_CLOSED", "ingress WAL is closed"));
    if (this.#poison !== undefined) return Promise.reject(this.#poisonedError());
    if (records.length === 0) return Promise.reject(new WalError("RECORD_INVALID", "append of zero records"));
    let bytes = 0;
    for (const r of records) {
      const problem = walRecordInputProblem(r);
      if (problem !== undefined) return Promise.reject(new WalError("RECORD_INVALID", problem));
      const size = walRecordPayloadBytes(r);
      if (size > this.#maxRecordBytes) {
        return Promise.reject(
          new WalError(
            "RECORD_TOO_LARGE",
            `record of ${size} bytes exceeds maxRecordBytes ${this.#maxRecordBytes}`,
          ),
        );
      }
      bytes += walFrameHeaderBytes + size;
    }
    const { promise, resolve, reject } = Promise.withResolvers<AppendResult>();
    this.#staged.push({ records, firstSeq: this.#nextSeq, bytes, resolve, reject });
    this.#nextSeq += records.length;
    this.#kick();
    return promise;
  }

  #poisonedError(): WalError {
    return new WalError(
      "WAL_POISONED",
      "ingress WAL is poisoned by an I/O failure; this append is not known to be durable",
      {
        cause: this.#poison?.cause,
      },
    );
  }

  #kick(): void {
    if (!this.#busy && !this.#kickQueued) {
      // Same-tick appends join this group; no timer, no added latency.
      this.#kickQueued = true;
      queueMicrotask(() => {
        this.#kickQueued = false;
        this.#pump();
      });
    }
    if (this.#timer === undefined && this.stagedCount > 0) {
      this.#timer = setTimeout(() => this.#onBackstop(), this.#backstopMs);
      this.#timer.unref();
    }
  }

  #onBackstop(): void {
    this.#timer = undefined;
    this.#pump();
    if (this.stagedCount > 0 && this.#poison === undefined) this.#kick();
  }

  #pump(): void {
    if (this.#busy || this.#poison !== undefined || this.stagedCount === 0) return;
    this.#busy = true;
    let group: Staged[] = [];
    let roll = false;
    let buf: Buffer;
    try {
      ({ group, roll } = this.#takeGroup());
      buf = this.#encode(group);
    } catch (err) {
      this.#fail(group, err);
      return;
    }
    const first = group[0]!;
    const last = group[group.length - 1]!;
    const lastSeq = last.firstSeq + last.records.length - 1;
    this.#sink.commit(buf, first.firstSeq, lastSeq, roll).then(
      () => this.#succeed(group, buf, first.firstSeq, lastSeq),
      (err: unknown) => this.#fail(group, err),
    );
  }

  /** Takes a FIFO prefix of the staged appends that fits the sink's plan. */
  #takeGroup(): { group: Staged[]; roll: boolean } {
    const first = this.#staged[this.#head]!;
    const plan = this.#sink.plan(first.bytes);
    let end = this.#head + 1;
    let total = first.bytes;
    while (end < this.#staged.length) {
      const next = this.#staged[end]!;
      if (total + next.bytes > plan.capacityBytes) break;
      total += next.bytes;
      end++;
    }
    const group = this.#staged.slice(this.#head, end) as Staged[];
    for (let i = this.#head; i < end; i++) this.#staged[i] = undefined;
    this.#head = end;
    if (this.#head === this.#staged.length) {
      this.#staged = [];
      this.#head = 0;
    }
    return { group, roll: plan.roll };
  }

  /** One Buffer for the whole group, frames written in place. */
  #encode(group: readonly Staged[]): Buffer {
    let total = 0;
    for (const s of group) total += s.bytes;
    const buf = Buffer.allocUnsafe(total);
    let pos = 0;
    for (const s of group) pos = encodeWalFramesInto(buf, pos, s.records, s.firstSeq);
    if (pos !== total) throw new Error(`group encoded to ${pos} bytes, sized ${total}`);
    return buf;
  }

  #succeed(group: readonly Staged[], buf: Buffer, firstSeq: number, lastSeq: number): void {
    this.#groups++;
    this.#busy = false;
    this.#sink.durable(buf, firstSeq, lastSeq);
    for (const s of group) s.resolve({ firstSeq: s.firstSeq, lastSeq: s.firstSeq + s.records.length - 1 });
    this.#pump();
    this.#notifyIdle();
  }

  #fail(group: readonly Staged[], err: unknown): void {
    if (err instanceof WalError && err.code === "DISK_FULL") {
      this.#refuseDiskFull(group, err);
      return;
    }
    this.#poison = new WalError("WAL_POISONED", "ingress WAL write or fdatasync failed; WAL poisoned", {
      cause: err,
    });
    this.#log.error(
      { err, records: group.length },
      "ingress WAL poisoned: rejecting every staged and later append",
    );
    for (const s of group) s.reject(this.#poisonedError());
    for (let i = this.#head; i < this.#staged.length; i++) this.#staged[i]?.reject(this.#poisonedError());
    this.#staged = [];
    this.#head = 0;
    this.#busy = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#notifyIdle();
  }

  /** The group was not written (see DISK_FULL above): refuse it and everything staged, keep going. */
  #refuseDiskFull(group: readonly Staged[], err: WalError): void {
    const staged = this.#staged.slice(this.#head) as Staged[];
    this.#staged = [];
    this.#head = 0;
    const first = group[0];
    if (first !== undefined) this.#nextSeq = first.firstSeq;
    this.#log.error(
      { err: err.cause ?? err, records: group.length + staged.length },
      "ingress WAL: disk full; refusing this group and the staged appends",
    );
    for (const s of [...group, ...staged])
      s.reject(new WalError("DISK_FULL", err.message, { cause: err.cause }));
    this.#busy = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#notifyIdle();
  }

  /**
   * Runs `fn` while holding the writer, only if nothing is staged or in
   * flight; resolves false without running it otherwise. A failure in `fn`
   * poisons the WAL (it touched the active segment).
   */
  async exclusive(fn: () => Promise<void>): Promise<boolean> {
    if (this.#busy || this.#poison !== undefined || this.stagedCount > 0 || this.#closed) return false;
    this.#busy = true;
    try {
      await fn();
    } catch (err) {
      if (err instanceof WalError && err.code === "DISK_FULL") {
        // Nothing was created (a roll that could not create its segment).
        this.#busy = false;
        this.#pump();
        this.#notifyIdle();
        return false;
      }
      this.#fail([], err);
      throw this.#poison;
    }
    this.#busy = false;
    this.#pump();
    this.#notifyIdle();
    return true;
  }

  #notifyIdle(): void {
    if (this.#busy || this.stagedCount > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Stops accepting appends and waits until every staged append has its outcome. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#busy || this.stagedCount > 0) {
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    }
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
