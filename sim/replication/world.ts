// The replication world: brokers with per-partition replica logs on
// volumes, a versioned partition record (the NaradTopic status, written by
// compare-and-swap), the operator's election pass, and followers fetching
// from leaders. Every decision is the production pure code of
// broker/src/replication/ and operator/src/plan/election.ts; this file only
// moves state between them, with faults in between. No real time or I/O:
// the clock is a number, RPCs are calls that the network may drop.

import {
  type EpochHistory,
  lastEpoch,
  offsetForLeaderEpoch,
  startEpoch,
  truncateHistory,
} from "../../broker/src/replication/epoch-history.ts";
import {
  ackDecision,
  admitAcksAll,
  type FollowerProgress,
  highWatermark,
  type LeaderView,
  planIsrChange,
  recordFetch,
} from "../../broker/src/replication/leader.ts";
import {
  fenceLeader,
  fenceReplica,
  followerHwm,
  planTruncation,
} from "../../broker/src/replication/replica.ts";
import type { Prng } from "../../broker/src/testing/prng.ts";
import { type MemberHealth, planElection } from "../../operator/src/plan/election.ts";
import type { IsrMember, ReplicaAssignment } from "../../packages/api/src/v1alpha1/replication.ts";

export interface Entry {
  epoch: number;
  /** Globally unique record id. */
  id: number;
}

/** One partition's copy on one volume. Everything here survives a crash except `log` above `durable`. */
export interface Replica {
  log: Entry[];
  durable: number;
  history: EpochHistory;
  knownEpoch: number;
  hwm: number;
  hwmDurable: number;
}

const emptyReplica = (): Replica => ({
  log: [],
  durable: 0,
  history: [],
  knownEpoch: -1,
  hwm: 0,
  hwmDurable: 0,
});

export interface Versioned {
  version: number;
  rec: ReplicaAssignment;
}

interface PendingBatch {
  firstOffset: number;
  lastOffset: number;
  ids: number[];
  epoch: number;
  startedMs: number;
}

/** A leader's memory for one partition (lost in a crash). */
interface LeaderMem {
  epoch: number;
  epochStartOffset: number;
  startMs: number;
  hwm: number;
  followers: Map<string, FollowerProgress>;
  pending: { isr: IsrMember[]; expectedVersion: number } | null;
  batches: PendingBatch[];
}

export interface Broker {
  id: string;
  alive: boolean;
  volumeId: string;
  volumes: number;
  replicas: Map<number, Replica>;
  /** The broker's view of each partition record (memory; re-read after a restart). */
  view: Map<number, Versioned>;
  lead: Map<number, LeaderMem>;
  /** Partitions this broker must truncate (epoch-based) before fetching. */
  needsTruncation: Set<number>;
  /** Refresh of the view paused until this time (a stale watch). */
  viewStaleUntilMs: number;
}

export interface WorldSettings {
  brokers: number;
  partitions: number;
  replicationFactor: number;
  minInsync: number;
  replicaLagMs: number;
  downGraceMs: number;
  batchTimeoutMs: number;
  /**
   * The design fix this sim found (ADR 0007 "Volume identity"): the ISR names
   * (member, volume). Off: the ADR as first written, an ISR of names.
   */
  volumeIdentity: boolean;
  /**
   * The second fix: the HWM moves only with ≥ min_insync_replicas recorded,
   * and neither a shrink nor an election takes the ISR below it. Off: the
   * ADR as first written (HWM over any ISR, the old leader always removed).
   */
  minInsyncFloor: boolean;
  /** The third fix: ISR expansion also needs the leader's epoch start (off: the HWM alone, as first written). */
  epochStartRule: boolean;
}

export interface AckEvent {
  partition: number;
  epoch: number;
  leader: string;
  offset: number;
  id: number;
  /** (broker, volume) pairs whose durable log held it when it was acknowledged. */
  holders: Array<{ broker: string; volumeId: string }>;
}

export interface WorldEvents {
  onAck(e: AckEvent): void;
  onTruncationRefused(broker: string, partition: number, reason: string): void;
  trace(line: string): void;
}

export class ReplicationWorld {
  nowMs = 0;
  readonly brokers: Broker[];
  /** The authoritative partition records. */
  readonly store = new Map<number, Versioned>();
  /** Brokers cut off from everyone (brokers, operator, API). */
  readonly isolated = new Set<string>();
  /** The operator: its view of records, of liveness and of volumes. */
  readonly opView = new Map<number, Versioned>();
  readonly opLastSeen = new Map<string, number>();
  readonly opVolume = new Map<string, string>();
  opStaleUntilMs = 0;
  /** Highest HWM any leader computed per partition (what may ever be exposed). */
  readonly maxHwm = new Map<number, number>();
  /** Bumped by anything that can take a record off a replica or change an ISR (for the invariants). */
  changes = 0;
  nextId = 1;
  produced = 0;
  acked = 0;
  refusedNotEnough = 0;
  elections = 0;
  isrChanges = 0;
  truncations = 0;

  readonly s: WorldSettings;
  readonly rnd: Prng;
  readonly ev: WorldEvents;

  constructor(s: WorldSettings, rnd: Prng, ev: WorldEvents) {
    this.s = s;
    this.rnd = rnd;
    this.ev = ev;
    this.brokers = Array.from({ length: s.brokers }, (_, i) => ({
      id: `b${i}`,
      alive: true,
      volumeId: `b${i}.v1`,
      volumes: 1,
      replicas: new Map(),
      view: new Map(),
      lead: new Map(),
      needsTruncation: new Set(),
      viewStaleUntilMs: 0,
    }));
    for (let p = 0; p < s.partitions; p++) {
      const replicas = Array.from({ length: s.replicationFactor }, (_, k) => `b${(p + k) % s.brokers}`);
      const rec: ReplicaAssignment = {
        partition: p,
        leader: replicas[0] as string,
        replicas,
        isr: replicas.map((member) => ({ member, volumeId: `${member}.v1` })),
        leaderEpoch: 0,
      };
      this.store.set(p, { version: 1, rec });
      this.opView.set(p, { version: 1, rec });
      for (const id of replicas) {
        const b = this.broker(id);
        b.replicas.set(p, emptyReplica());
      }
    }
    for (const b of this.brokers) {
      this.opLastSeen.set(b.id, 0);
      this.opVolume.set(b.id, b.volumeId);
      this.refreshView(b);
    }
  }

  broker(id: string): Broker {
    const b = this.brokers.find((x) => x.id === id);
    if (b === undefined) throw new Error(`no broker ${id}`);
    return b;
  }

  /** Whether a message between two parties gets through (isolation; dead parties answer nothing). */
  reach(a: string, b: string): boolean {
    return !this.isolated.has(a) && !this.isolated.has(b);
  }

  // ---- the partition record (the Kubernetes API) ----

  /**
   * compare-and-swap on the record's version. The request may be lost
   * (nothing applied) or its answer may be lost (applied, caller not told).
   */
  cas(
    from: string,
    p: number,
    expectedVersion: number,
    next: ReplicaAssignment,
  ): "ok" | "conflict" | "unknown" {
    if (this.isolated.has(from) || this.rnd.bool(0.05)) return "unknown";
    const cur = this.store.get(p) as Versioned;
    if (cur.version !== expectedVersion) return "conflict";
    this.store.set(p, { version: cur.version + 1, rec: next });
    this.changes++;
    if (this.rnd.bool(0.08)) return "unknown";
    return "ok";
  }

  // ---- views ----

  refreshView(b: Broker): void {
    if (!b.alive || this.isolated.has(b.id) || this.nowMs < b.viewStaleUntilMs) return;
    for (const [p, v] of this.store) this.applyView(b, p, v);
  }

  applyView(b: Broker, p: number, v: Versioned): void {
    const old = b.view.get(p);
    if (old !== undefined && old.version >= v.version) return;
    b.view.set(p, v);
    const r = b.replicas.get(p);
    const mem = b.lead.get(p);
    if (mem?.pending && v.version > mem.pending.expectedVersion) {
      // The outcome of the ISR change is now known from the record itself.
      mem.pending = null;
    }
    if (v.rec.leader !== b.id || (mem !== undefined && mem.epoch !== v.rec.leaderEpoch)) {
      if (mem !== undefined) {
        this.ev.trace(`${b.id} p${p}: no longer leader of epoch ${mem.epoch} (record v${v.version})`);
        b.lead.delete(p);
      }
    }
    if (r === undefined) return;
    if (v.rec.leader !== b.id && (old === undefined || old.rec.leaderEpoch !== v.rec.leaderEpoch))
      b.needsTruncation.add(p);
  }

  /** The ISR entry that vouches for `member`, by the rules of the mode. */
  isrEntryValid(rec: ReplicaAssignment, member: string, volumeId: string): boolean {
    const e = rec.isr.find((m) => m.member === member);
    return e !== undefined && (!this.s.volumeIdentity || e.volumeId === volumeId);
  }

  /**
   * Takes leadership when the view says so. A broker on a volume its ISR
   * entry does not name never leads (it would lead with missing data); in
   * the names-only mode it cannot tell and leads with what it has.
   */
  maybeLead(b: Broker, p: number): LeaderMem | undefined {
    const v = b.view.get(p);
    const r = b.replicas.get(p);
    if (!b.alive || v === undefined || r === undefined || v.rec.leader !== b.id) return undefined;
    if (!this.isrEntryValid(v.rec, b.id, b.volumeId)) return undefined;
    const epoch = v.rec.leaderEpoch;
    const cur = b.lead.get(p);
    if (cur !== undefined && cur.epoch === epoch) return cur;
    const fence = fenceReplica(r.knownEpoch, epoch);
    if (!fence.ok) return undefined;
    // A new leader fsyncs what it fetched, then starts its epoch at its end.
    r.knownEpoch = epoch;
    r.durable = r.log.length;
    r.hwmDurable = r.hwm;
    r.history = startEpoch(r.history, epoch, r.log.length);
    b.needsTruncation.delete(p);
    const mem: LeaderMem = {
      epoch,
      epochStartOffset: r.log.length,
      startMs: this.nowMs,
      hwm: r.hwm,
      followers: new Map(),
      pending: null,
      batches: [],
    };
    b.lead.set(p, mem);
    this.ev.trace(
      `${b.id} p${p}: leads epoch ${epoch} from offset ${r.log.length} (hwm ${r.hwm}, isr ${fmtIsr(v.rec.isr)})`,
    );
    return mem;
  }

  leaderView(b: Broker, p: number, mem: LeaderMem): LeaderView {
    const v = b.view.get(p) as Versioned;
    const r = b.replicas.get(p) as Replica;
    // Names-only mode: a follower's volume is never compared with its entry.
    const named = this.s.volumeIdentity
      ? mem.followers
      : new Map(
          [...mem.followers].map(([k, f]) => [
            k,
            { ...f, volumeId: v.rec.isr.find((m) => m.member === k)?.volumeId ?? f.volumeId },
          ]),
        );
    // HWM-only expansion (the ADR's first design): a replica outside the ISR
    // is added back at the HWM alone, neither at the epoch's start nor only
    // while caught up (its clock counts as current; ISR members' clocks, which
    // the shrink reads, are left alone).
    const followers = this.s.epochStartRule
      ? named
      : new Map(
          [...named].map(([k, f]) => [
            k,
            v.rec.isr.some((m) => m.member === k) ? f : { ...f, caughtUpAtMs: this.nowMs },
          ]),
        );
    return {
      self: b.id,
      selfVolumeId: this.s.volumeIdentity
        ? b.volumeId
        : (v.rec.isr.find((m) => m.member === b.id)?.volumeId ?? b.volumeId),
      logEnd: r.durable,
      hwm: mem.hwm,
      epochStartOffset: this.s.epochStartRule ? mem.epochStartOffset : 0,
      recordedIsr: v.rec.isr,
      minInsync: this.s.minInsyncFloor ? this.s.minInsync : 1,
      pending: mem.pending,
      followers,
    };
  }

  // ---- actions ----

  produce(b: Broker, p: number): void {
    const mem = this.maybeLead(b, p);
    if (mem === undefined || this.isolated.has(b.id)) return;
    const v = b.view.get(p) as Versioned;
    if (admitAcksAll(v.rec.isr.length, this.s.minInsync).kind === "refuse") {
      this.refusedNotEnough++;
      return;
    }
    const r = b.replicas.get(p) as Replica;
    const n = this.rnd.range(1, 3);
    const ids: number[] = [];
    const first = r.log.length;
    for (let i = 0; i < n; i++) {
      const id = this.nextId++;
      ids.push(id);
      r.log.push({ epoch: mem.epoch, id });
    }
    this.produced += n;
    mem.batches.push({
      firstOffset: first,
      lastOffset: first + n - 1,
      ids,
      epoch: mem.epoch,
      startedMs: this.nowMs,
    });
  }

  fsync(b: Broker): void {
    if (!b.alive) return;
    for (const r of b.replicas.values()) {
      r.durable = r.log.length;
      r.hwmDurable = r.hwm;
    }
  }

  /** The leader's periodic work: HWM, acks=all answers, the ISR change to ask for. */
  leaderTick(b: Broker, p: number): void {
    const mem = this.maybeLead(b, p);
    if (mem === undefined) return;
    if (mem.pending !== null) {
      // An ISR change with no answer: only a record version beyond it ends
      // it. While the record still shows the version it was asked at, the
      // same change is asked again (it lands now or conflicts), never
      // dropped: a late write could still land, and the next leader would
      // be chosen from it.
      this.refreshView(b);
      const pend = b.lead.get(p)?.pending;
      if (pend && this.reach(b.id, "api")) {
        const cur = b.view.get(p) as Versioned;
        const out = this.cas(b.id, p, pend.expectedVersion, { ...cur.rec, isr: pend.isr });
        this.ev.trace(
          `${b.id} p${p}: asks isr ${fmtIsr(pend.isr)} again at v${pend.expectedVersion}: ${out}`,
        );
        if (out === "ok") {
          this.isrChanges++;
          this.applyView(b, p, { version: pend.expectedVersion + 1, rec: { ...cur.rec, isr: pend.isr } });
        }
      }
      if (b.lead.get(p) !== mem) return;
    }
    const v = b.view.get(p) as Versioned;
    const r = b.replicas.get(p) as Replica;
    mem.hwm = highWatermark(this.leaderView(b, p, mem));
    r.hwm = Math.max(r.hwm, mem.hwm);
    this.maxHwm.set(p, Math.max(this.maxHwm.get(p) ?? 0, mem.hwm));
    const still: PendingBatch[] = [];
    for (const batch of mem.batches) {
      const d = ackDecision({
        lastOffset: batch.lastOffset,
        hwm: mem.hwm,
        recordedIsrSize: v.rec.isr.length,
        minInsync: this.s.minInsync,
      });
      if (d.kind === "ack" && !this.isolated.has(b.id)) {
        this.ev.trace(
          `${b.id} p${p}: acks ${batch.firstOffset}..${batch.lastOffset} of epoch ${batch.epoch} (hwm ${mem.hwm}, isr ${fmtIsr(v.rec.isr)})`,
        );
        for (let i = 0; i < batch.ids.length; i++) {
          const offset = batch.firstOffset + i;
          this.acked++;
          this.ev.onAck({
            partition: p,
            epoch: batch.epoch,
            leader: b.id,
            offset,
            id: batch.ids[i] as number,
            holders: this.holders(p, offset, batch.ids[i] as number),
          });
        }
      } else if (this.nowMs - batch.startedMs < this.s.batchTimeoutMs) {
        still.push(batch);
      }
    }
    mem.batches = still;
    const proposal = planIsrChange({
      view: this.leaderView(b, p, mem),
      replicas: v.rec.replicas,
      nowMs: this.nowMs,
      replicaLagMs: this.s.replicaLagMs,
      leaderStartMs: mem.startMs,
    });
    if (proposal === null) return;
    mem.pending = { isr: proposal, expectedVersion: v.version };
    const next = { ...v.rec, isr: proposal };
    const out = this.cas(b.id, p, v.version, next);
    this.ev.trace(`${b.id} p${p}: asks isr ${fmtIsr(proposal)} at v${v.version}: ${out}`);
    if (out === "ok") {
      this.isrChanges++;
      this.applyView(b, p, { version: v.version + 1, rec: next });
    } else if (out === "conflict") {
      // A conflict is a definite "not applied": the record moved on; read it.
      mem.pending = null;
      this.refreshView(b);
    } else if (this.store.get(p)?.version !== v.version) {
      this.isrChanges++;
    }
    // "unknown": pending stays until the record is read again (applyView).
  }

  /** Who holds (durably) record `id` at `offset` of partition p. */
  holders(p: number, offset: number, id: number): Array<{ broker: string; volumeId: string }> {
    const out: Array<{ broker: string; volumeId: string }> = [];
    for (const b of this.brokers) {
      const r = b.replicas.get(p);
      if (r !== undefined && offset < r.durable && r.log[offset]?.id === id)
        out.push({ broker: b.id, volumeId: b.volumeId });
    }
    return out;
  }

  /** One fetch (or truncation round) of follower f for partition p. */
  fetch(f: Broker, p: number): void {
    const v = f.view.get(p);
    const r = f.replicas.get(p);
    if (!f.alive || v === undefined || r === undefined || v.rec.leader === null || v.rec.leader === f.id)
      return;
    const epoch = v.rec.leaderEpoch;
    const fence = fenceReplica(r.knownEpoch, epoch);
    if (!fence.ok) return; // our view is older than what we already saw: wait for the watch
    r.knownEpoch = epoch;
    const leader = this.broker(v.rec.leader);
    if (!leader.alive || !this.reach(f.id, leader.id) || this.rnd.bool(0.03)) return;
    const mem = this.maybeLead(leader, p);
    const lr = leader.replicas.get(p);
    if (mem === undefined || lr === undefined || !fenceLeader(mem.epoch, epoch).ok) return;

    if (f.needsTruncation.has(p)) {
      const asked = lastEpoch(r.history);
      const answer = offsetForLeaderEpoch(lr.history, lr.durable, asked);
      if (this.rnd.bool(0.03)) return; // answer lost
      const step = planTruncation({ logEnd: r.log.length, hwm: r.hwm, history: r.history }, asked, answer);
      if (step.kind === "refuse") {
        this.ev.onTruncationRefused(f.id, p, step.reason);
        return;
      }
      if (step.truncateTo < r.log.length) {
        this.truncations++;
        this.ev.trace(
          `${f.id} p${p}: truncates ${r.log.length} -> ${step.truncateTo} (asked epoch ${asked}, leader ${leader.id} says ${answer.epoch}@${answer.endOffset}, hwm ${r.hwm})`,
        );
      }
      this.truncate(r, step.truncateTo);
      if (step.kind === "follow") f.needsTruncation.delete(p);
      return;
    }

    const fetchOffset = r.durable;
    if (fetchOffset > lr.durable) {
      // More than the leader has: only a missed truncation can cause this.
      f.needsTruncation.add(p);
      return;
    }
    mem.followers.set(
      f.id,
      recordFetch(
        mem.followers.get(f.id),
        { member: f.id, volumeId: f.volumeId, fetchOffset },
        lr.durable,
        this.nowMs,
      ),
    );
    const frames = lr.log.slice(fetchOffset, Math.min(lr.durable, fetchOffset + this.rnd.range(1, 6)));
    mem.hwm = highWatermark(this.leaderView(leader, p, mem));
    this.maxHwm.set(p, Math.max(this.maxHwm.get(p) ?? 0, mem.hwm));
    if (this.rnd.bool(0.03)) return; // answer lost
    // The follower appends after its durable end (an unfsynced tail from an
    // earlier answer is the same data again, or stale: replaced).
    if (r.log.length > fetchOffset) this.changes++;
    r.log.length = fetchOffset;
    // Epoch starts of the replaced tail go with it (the broker's load rule
    // drops entries at or above the recovered end the same way).
    r.history = truncateHistory(r.history, fetchOffset);
    for (const e of frames) {
      if (e.epoch > lastEpoch(r.history)) r.history = startEpoch(r.history, e.epoch, r.log.length);
      r.log.push(e);
    }
    // Followers fsync before the next fetch; a kill -9 in between loses the
    // tail, which the leader never counted (it counts fetch offsets).
    if (this.rnd.bool(0.7)) r.durable = r.log.length;
    r.hwm = followerHwm(r.hwm, mem.hwm, r.durable);
    if (r.durable === r.log.length) r.hwmDurable = r.hwm;
  }

  truncate(r: Replica, to: number): void {
    this.changes++;
    r.log.length = Math.min(r.log.length, to);
    r.durable = Math.min(r.durable, to);
    r.history = truncateHistory(r.history, to);
  }

  /** One operator pass: liveness, volumes, elections by CAS on what it read. */
  operatorPass(): void {
    for (const b of this.brokers) {
      if (b.alive && !this.isolated.has(b.id)) {
        this.opLastSeen.set(b.id, this.nowMs);
        this.opVolume.set(b.id, b.volumeId);
      }
    }
    if (this.nowMs >= this.opStaleUntilMs) for (const [p, v] of this.store) this.opView.set(p, v);
    const down = (m: string) => this.nowMs - (this.opLastSeen.get(m) ?? 0) > this.s.downGraceMs;
    for (const [p, v] of this.opView) {
      const health = (m: string): MemberHealth => ({
        down: down(m),
        // Names-only mode: the operator does not compare volumes.
        volumeId: this.s.volumeIdentity
          ? this.opVolume.get(m)
          : (v.rec.isr.find((e) => e.member === m)?.volumeId ?? this.opVolume.get(m)),
      });
      const d = planElection(v.rec, health, this.s.minInsyncFloor ? this.s.minInsync : 1);
      if (d.kind === "keep") continue;
      const out = this.cas("operator", p, v.version, d.next);
      this.ev.trace(
        `operator p${p}: ${d.kind} epoch ${d.next.leaderEpoch} leader ${d.next.leader} isr ${fmtIsr(d.next.isr)} (${d.reason}) at v${v.version}: ${out}`,
      );
      if (out === "ok") {
        this.elections++;
        this.opView.set(p, { version: v.version + 1, rec: d.next });
      } else if (out === "conflict") {
        this.opView.set(p, this.store.get(p) as Versioned);
      } else if (this.store.get(p)?.version !== v.version) this.elections++;
    }
  }

  // ---- faults ----

  /** kill -9: memory and every unfsynced tail are gone. */
  kill(b: Broker): void {
    this.changes++;
    b.alive = false;
    b.lead.clear();
    b.view.clear();
    for (const r of b.replicas.values()) {
      r.log.length = r.durable;
      r.hwm = r.hwmDurable;
      // The epoch file is fsynced when an epoch starts, the record that
      // started it maybe not: recovery drops entries at or above the log end
      // (else the next epoch would start "before" a phantom one).
      r.history = truncateHistory(r.history, r.durable);
    }
  }

  /** Durable copies destroyed with their volume, per `p/offset/id` (the invariants count them at ack time). */
  readonly lostCopies = new Map<string, number>();

  /** The volume is destroyed: the broker comes back empty, on a new volume. */
  loseVolume(b: Broker): void {
    this.kill(b);
    for (const [p, r] of b.replicas)
      for (let o = 0; o < r.durable; o++) {
        const k = `${p}/${o}/${r.log[o]?.id}`;
        this.lostCopies.set(k, (this.lostCopies.get(k) ?? 0) + 1);
      }
    b.volumes++;
    b.volumeId = `${b.id}.v${b.volumes}`;
    for (const p of b.replicas.keys()) b.replicas.set(p, emptyReplica());
  }

  restart(b: Broker): void {
    b.alive = true;
    for (const p of b.replicas.keys()) b.needsTruncation.add(p);
    this.refreshView(b);
  }
}

export function fmtIsr(isr: readonly IsrMember[]): string {
  return `[${isr.map((m) => (m.volumeId.startsWith(`${m.member}.`) ? m.volumeId : `${m.member}:${m.volumeId}`)).join(",")}]`;
}
