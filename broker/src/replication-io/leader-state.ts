// One replicated partition led by this node at one leader epoch (ADR 0007):
// the I/O around replication/leader.ts. It is the partition log's commit
// gate (a commit resolves once the HWM passed its records), it takes the
// followers' progress from their fetches and moves the log's HWM, and it
// asks the authority to shrink or expand the ISR (compare-and-swap; an
// answer that never came leaves the change pending and the HWM waits for
// both sets). A leader state lives for one epoch: when the record names
// another leader or epoch, or the authority refuses a change as stale, it
// stops, and every waiting commit fails with NOT_LEADER.

import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { LogError } from "../log/log-errors.ts";
import type { OpenedPartitionLog, ReplicaCommitGate } from "../log/partition-log.ts";
import type { IsrWriteOutcome } from "../meta/types.ts";
import type { EpochHistory } from "../replication/epoch-history.ts";
import {
  ackDecision,
  type FollowerProgress,
  highWatermark,
  type LeaderView,
  planIsrChange,
  recordFetch,
} from "../replication/leader.ts";

export interface LeaderStateOptions {
  topic: string;
  partition: number;
  self: string;
  selfVolumeId: string;
  /** The record this node leads by (record.leader === self, at record.leaderEpoch). */
  record: ReplicaAssignment;
  minInsync: number;
  /**
   * The log end when this node took over (the epoch's start for a new
   * leader; its log end at restart for one back in its own epoch): every
   * record that may have been acknowledged lies below it, so a replica joins
   * the ISR only past it.
   */
  epochStartOffset: number;
  /** The partition's epoch history, this epoch included (OffsetForLeaderEpoch, fetch answers). */
  history: EpochHistory;
  /** The HWM the log opened with. */
  hwm: number;
  /** The log end when this node took over. */
  logEnd: number;
  /** A follower not caught up for this long leaves the ISR (never below min_insync_replicas). */
  replicaLagMs: number;
  /** A commit waits this long for its replicas, then fails REPLICATION_TIMEOUT (the records stay; a re-send is deduped). */
  replicationTimeoutMs: number;
  /** How often the ISR is checked for a shrink or an expansion. */
  isrCheckIntervalMs: number;
  /** Backoff before an ISR change with no answer is asked again. */
  isrRetryMs: number;
  /** `expect.isr`: the recorded ISR the change was decided on (metastore recordIsr). */
  recordIsr(
    expect: { leader: string; leaderEpoch: number; isr: readonly IsrMember[] },
    isr: readonly IsrMember[],
  ): Promise<IsrWriteOutcome>;
  nowMs(): number;
  logger: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
  };
  /** Told when this state stops by itself (a stale ISR write): the manager re-reads the record. */
  onStopped?: (reason: string) => void;
  /** Told after each ISR change this leader recorded (metrics). */
  onIsrChange?: (kind: "shrink" | "expand", isr: readonly IsrMember[]) => void;
}

interface Waiter {
  end: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

export class LeaderState implements ReplicaCommitGate {
  readonly topic: string;
  readonly partition: number;
  readonly epoch: number;
  readonly #o: LeaderStateOptions;
  readonly #startMs: number;
  #view: LeaderView;
  #replicas: readonly string[];
  #log: OpenedPartitionLog | undefined;
  #history: EpochHistory;
  #stopped: string | null = null;
  #waiters: Waiter[] = [];
  #asking = false;
  /** The recorded ISR the pending change was decided on (sent with each retry of it). */
  #pendingBase: readonly IsrMember[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(o: LeaderStateOptions) {
    this.#o = o;
    this.topic = o.topic;
    this.partition = o.partition;
    this.epoch = o.record.leaderEpoch;
    this.#startMs = o.nowMs();
    this.#history = o.history;
    this.#replicas = o.record.replicas;
    this.#view = {
      self: o.self,
      selfVolumeId: o.selfVolumeId,
      logEnd: o.logEnd,
      hwm: o.hwm,
      epochStartOffset: o.epochStartOffset,
      recordedIsr: o.record.isr,
      minInsync: o.minInsync,
      pending: null,
      followers: new Map(),
    };
    this.#timer = setInterval(() => this.#checkIsr(), o.isrCheckIntervalMs);
    this.#timer.unref();
  }

  /** The log this state gates (opened with it as the gate). */
  attach(log: OpenedPartitionLog): void {
    this.#log = log;
    this.#advance();
  }

  get stopped(): boolean {
    return this.#stopped !== null;
  }

  get history(): EpochHistory {
    return this.#history;
  }

  get hwm(): number {
    return this.#view.hwm;
  }

  /** What the ISR holds now (recorded), and a change in flight. */
  isr(): { recorded: readonly IsrMember[]; pending: readonly IsrMember[] | null } {
    return { recorded: this.#view.recordedIsr, pending: this.#view.pending?.isr ?? null };
  }

  followers(): ReadonlyMap<string, FollowerProgress> {
    return this.#view.followers;
  }

  // ---- ReplicaCommitGate

  assertLeading(): void {
    if (this.#stopped !== null)
      throw new LogError("NOT_LEADER", `${this.#name()}: no longer leader (${this.#stopped})`);
  }

  onLogEnd(end: number): void {
    this.#view = { ...this.#view, logEnd: end };
    this.#advance();
  }

  awaitReplicated(end: number): Promise<void> {
    if (this.#stopped !== null)
      return Promise.reject(
        new LogError("NOT_LEADER", `${this.#name()}: no longer leader (${this.#stopped})`),
      );
    const refusal = this.#refusal(end);
    if (refusal !== null) return Promise.reject(refusal);
    if (this.#view.hwm >= end) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        end,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters = this.#waiters.filter((x) => x !== w);
          reject(
            new LogError(
              "REPLICATION_TIMEOUT",
              `${this.#name()}: offsets below ${end} not on ${this.#o.minInsync} replica(s) within ${this.#o.replicationTimeoutMs} ms (HWM ${this.#view.hwm})`,
            ),
          );
        }, this.#o.replicationTimeoutMs),
      };
      w.timer.unref();
      this.#waiters.push(w);
    });
  }

  // ---- followers

  /**
   * A follower fetched at `fetchOffset` from `volumeId`: everything below is
   * durable on it. Returns the HWM after taking it into account.
   */
  recordFetch(member: string, volumeId: string, fetchOffset: number): number {
    if (this.#stopped !== null) return this.#view.hwm;
    const prev = this.#view.followers.get(member);
    const next = recordFetch(prev, { member, volumeId, fetchOffset }, this.#view.logEnd, this.#o.nowMs());
    const followers = new Map(this.#view.followers);
    followers.set(member, next);
    this.#view = { ...this.#view, followers };
    this.#advance();
    // A follower on another volume than its ISR entry, or one back in sync:
    // ask at once rather than at the next check.
    const entry = this.#view.recordedIsr.find((m) => m.member === member);
    if ((entry !== undefined && entry.volumeId !== volumeId) || (entry === undefined && !this.#asking))
      queueMicrotask(() => this.#checkIsr());
    return this.#view.hwm;
  }

  // ---- the record

  /**
   * The authority's record changed (or was re-read). Returns false when it
   * no longer names this node leader at this epoch: the state stopped.
   */
  onRecord(record: ReplicaAssignment | undefined, minInsync: number): boolean {
    if (this.#stopped !== null) return false;
    if (record === undefined || record.leader !== this.#o.self || record.leaderEpoch !== this.epoch) {
      this.stop(
        record === undefined
          ? "the partition is no longer replicated here"
          : `the record names ${record.leader ?? "no leader"} at epoch ${record.leaderEpoch}`,
      );
      return false;
    }
    const self = record.isr.find((m) => m.member === this.#o.self);
    if (self === undefined || self.volumeId !== this.#o.selfVolumeId) {
      this.stop("the ISR no longer lists this node on its current volume");
      return false;
    }
    this.#replicas = record.replicas;
    const pending = this.#view.pending;
    // A change seen recorded is no longer pending (its answer may be lost).
    const landed = pending !== null && sameIsr(pending.isr, record.isr);
    this.#view = {
      ...this.#view,
      recordedIsr: record.isr,
      minInsync,
      pending: landed ? null : pending,
    };
    this.#advance();
    return true;
  }

  /** Stops leading: waiting commits fail NOT_LEADER; the HWM stays where it is. */
  stop(reason: string): void {
    if (this.#stopped !== null) return;
    this.#stopped = reason;
    clearInterval(this.#timer);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.reject(new LogError("NOT_LEADER", `${this.#name()}: no longer leader (${reason})`));
    }
    this.#o.logger.info(
      { topic: this.topic, partition: this.partition, epoch: this.epoch, reason },
      "stopped leading",
    );
  }

  // ---- internals

  #name(): string {
    return `${this.topic}/${this.partition}@${this.epoch}`;
  }

  /** A refusal for a commit ending at `end` now, or null (ADR 0007: fewer recorded ISR members than the minimum). */
  #refusal(end: number): LogError | null {
    const d = ackDecision({
      lastOffset: end - 1,
      hwm: this.#view.hwm,
      recordedIsrSize: this.#view.recordedIsr.length,
      minInsync: this.#view.minInsync,
    });
    return d.kind === "refuse" ? new LogError("NOT_ENOUGH_REPLICAS", `${this.#name()}: ${d.message}`) : null;
  }

  /** Recomputes the HWM, moves the log's, and answers the commits it covers (or refuses them). */
  #advance(): void {
    if (this.#stopped !== null) return;
    const hwm = highWatermark(this.#view);
    if (hwm > this.#view.hwm) {
      this.#view = { ...this.#view, hwm };
      this.#log?.advanceHwm(hwm);
    }
    if (this.#waiters.length === 0) return;
    const keep: Waiter[] = [];
    for (const w of this.#waiters) {
      const refusal = this.#refusal(w.end);
      if (w.end <= this.#view.hwm) {
        clearTimeout(w.timer);
        w.resolve();
      } else if (refusal !== null) {
        clearTimeout(w.timer);
        w.reject(refusal);
      } else keep.push(w);
    }
    this.#waiters = keep;
  }

  /** Asks for the ISR change the rules call for, one at a time. */
  #checkIsr(): void {
    if (this.#stopped !== null || this.#asking) return;
    const pending = this.#view.pending;
    if (pending === null) this.#pendingBase = this.#view.recordedIsr;
    const base = this.#pendingBase;
    const change =
      pending?.isr ??
      planIsrChange({
        view: this.#view,
        replicas: this.#replicas,
        nowMs: this.#o.nowMs(),
        replicaLagMs: this.#o.replicaLagMs,
        leaderStartMs: this.#startMs,
      });
    if (change === null) return;
    const kind = change.length < this.#view.recordedIsr.length ? "shrink" : "expand";
    this.#view = { ...this.#view, pending: { isr: change } };
    this.#asking = true;
    void this.#o
      .recordIsr({ leader: this.#o.self, leaderEpoch: this.epoch, isr: base }, change)
      .catch((err: unknown): IsrWriteOutcome => ({ kind: "unknown", reason: String(err) }))
      .then((outcome) => {
        this.#asking = false;
        if (this.#stopped !== null) return;
        switch (outcome.kind) {
          case "recorded":
            this.#o.logger.info(
              { topic: this.topic, partition: this.partition, epoch: this.epoch, isr: outcome.record.isr },
              `ISR ${kind} recorded`,
            );
            this.#view = { ...this.#view, pending: null };
            this.onRecord(outcome.record, this.#view.minInsync);
            this.#o.onIsrChange?.(kind, outcome.record.isr);
            return;
          case "superseded":
            // Another writer changed the ISR (the operator dropped a replica)
            // since this change was decided; nothing of it can land any more.
            // Decide again on the record as it is.
            this.#o.logger.info(
              { topic: this.topic, partition: this.partition, epoch: this.epoch, reason: outcome.reason },
              `ISR ${kind} superseded; deciding again`,
            );
            this.#view = { ...this.#view, pending: null };
            if (this.onRecord(outcome.record, this.#view.minInsync)) queueMicrotask(() => this.#checkIsr());
            return;
          case "stale":
            // The record moved on: another leader or epoch. Nothing more is
            // acknowledged at this epoch; the manager follows the new record.
            this.stop(`ISR change refused: ${outcome.reason}`);
            this.#o.onStopped?.(outcome.reason);
            return;
          case "unknown": {
            // It may have landed: stays pending (the HWM waits for both), asked again.
            this.#o.logger.warn(
              { topic: this.topic, partition: this.partition, epoch: this.epoch, reason: outcome.reason },
              "ISR change unanswered; asking again",
            );
            const t = setTimeout(() => this.#checkIsr(), this.#o.isrRetryMs);
            t.unref();
            return;
          }
        }
      });
  }
}

function sameIsr(a: readonly IsrMember[], b: readonly IsrMember[]): boolean {
  if (a.length !== b.length) return false;
  const key = (m: IsrMember) => `${m.member}\u0000${m.volumeId}`;
  const set = new Set(a.map(key));
  return b.every((m) => set.has(key(m)));
}
