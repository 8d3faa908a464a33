// The replicas this node holds (ADR 0007): for every partition of a
// replicated topic whose record lists this node, the role the record gives
// it, and the transitions between roles, one at a time per partition.
//
//   lead     the record names this node leader and its ISR entry names this
//            node's current volume: the log store opens the partition with a
//            LeaderState as its commit gate; the leader-epochs file gets
//            (epoch, log end) before the first append of the epoch.
//   follow   another member leads: a fetcher (fetcher.ts) owns the
//            directory, truncates a divergent tail, then copies frames.
//   idle     no leader (offline), or the record names this node leader on a
//            volume it no longer has (it must not lead with missing data):
//            nothing runs; the operator elects.
//
// Leaving "lead" stops the LeaderState (waiting commits fail NOT_LEADER),
// closes the log (commits in flight settle first), forgets the partition's
// in-memory queue state (leases are not replicated), and records the HWM it
// reached in the replica checkpoint, so the fetcher never truncates below it.

import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { groupNamePattern } from "../api-contract.ts";
import { writeFrontier } from "../consumer/frontier-file.ts";
import { clusterAddressOf } from "../core/routing.ts";
import {
  type CursorPosition,
  isCursorFileName,
  listCursorFiles,
  writeCursorFile,
} from "../fanout/cursor-file.ts";
import { isLogError, LogError } from "../log/log-errors.ts";
import type { LogStore, ReplicaOpenMode } from "../log/log-store.ts";
import type { OpenedPartitionLog, ReplicaCommitGate } from "../log/partition-log.ts";
import type { Metastore } from "../meta/types.ts";
import { type EpochHistory, lastEpoch, startEpoch } from "../replication/epoch-history.ts";
import { RepeatGate } from "../replication/repeat-gate.ts";
import { type Role, roleOf, sameRole } from "../replication/role.ts";
import { topicReplication } from "../replication/topic-settings.ts";
import type { PeerPool } from "../rpc/client.ts";
import { runFollower, TruncationRefusedError } from "./fetcher.ts";
import type { LedPartition, ReplicatedPositions } from "./leader-source.ts";
import { LeaderState } from "./leader-state.ts";
import { appendEpoch, readCheckpoint, readEpochFile, writeCheckpoint } from "./replica-state-files.ts";

export interface ReplicaManagerOptions {
  replicaLagMs: number;
  replicationTimeoutMs: number;
  isrCheckIntervalMs: number;
  isrRetryMs: number;
  fetchMaxBytes: number;
  fetchMaxWaitMs: number;
  segmentBytes: number;
  maxFrameBytes: number;
  /** Wait before a follower that stopped (refusal, error, no address) tries again. */
  retryBackoffMs: number;
  /** A follower rewrites the HWM in its replica checkpoint at most this often. */
  checkpointIntervalMs: number;
  /** How old the leader's cached frontiers may be when sent to followers. */
  frontierRefreshMs: number;
}

export interface ReplicaManagerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ReplicaManagerDeps {
  nodeId: string;
  /** This node's volume identity (its volume-id marker's uuid). */
  volumeId: string;
  metastore: Pick<
    Metastore,
    "listTopics" | "getTopic" | "replicaAssignment" | "recordIsr" | "members" | "onChange"
  >;
  logs: Pick<LogStore, "get" | "partitionDir" | "closePartition" | "removePartition">;
  peers: Pick<PeerPool, "peer">;
  /** Queue consumption: forget a partition's in-memory state; read its durable frontiers. */
  consumers?: {
    dropPartition(topic: string, partition: number): void;
    frontiers(topic: string, partition: number): Promise<Array<{ group: string; offset: number }>>;
  };
  options: ReplicaManagerOptions;
  nowMs(): number;
  logger: ReplicaManagerLogger;
  /** Observability hooks (metrics). */
  events?: {
    roleChanged?(topic: string, partition: number, role: Role["kind"]): void;
    isrChanged?(topic: string, partition: number, kind: "shrink" | "expand"): void;
    followerProgress?(topic: string, partition: number, lag: number): void;
  };
}

/** Every position is sent to each follower again this often, changed or not (a lost answer is made good). */
const resendAllMs = 30_000;

/** A commit gate that refuses until the leader state behind it is ready. */
class GateProxy implements ReplicaCommitGate {
  target: LeaderState | undefined;
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  assertLeading(): void {
    if (this.target === undefined) throw notLeader(`${this.name}: leadership is starting`);
    this.target.assertLeading();
  }
  onLogEnd(end: number): void {
    this.target?.onLogEnd(end);
  }
  awaitReplicated(end: number): Promise<void> {
    if (this.target === undefined) return Promise.reject(notLeader(`${this.name}: leadership is starting`));
    return this.target.awaitReplicated(end);
  }
}

const validOffset = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

function notLeader(message: string): LogError {
  return new LogError("NOT_LEADER", message);
}

type Current =
  | { kind: "idle" }
  | { kind: "lead"; epoch: number; gate: GateProxy; knownHwm: number; state: LeaderState | undefined }
  | { kind: "follow"; epoch: number; leader: string; abort: AbortController; done: Promise<void> };

/** One partition replica on this node: its role and the transitions, serialised. */
class PartitionReplica {
  readonly topic: string;
  readonly partition: number;
  readonly #d: ReplicaManagerDeps;
  #record: ReplicaAssignment | undefined;
  #minInsync = 1;
  #current: Current = { kind: "idle" };
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  /** What each follower was sent, on which volume (only changes are sent, all again every resendAllMs or to a new volume). */
  readonly #sent = new Map<string, { sinceMs: number; volumeId: string; values: Map<string, string> }>();
  #positionCache:
    | {
        atMs: number;
        frontiers: Array<{ group: string; offset: number }>;
        cursors: Array<{ file: string; position: CursorPosition }>;
      }
    | undefined;
  /**
   * An epoch whose leadership ended by a refused ISR write (the record moved
   * on): not taken up again until the record this node sees changes.
   */
  #refusedEpoch: number | undefined;

  /** `after`: a removal of this partition's earlier copy that must finish first. */
  constructor(d: ReplicaManagerDeps, topic: string, partition: number, after?: Promise<void>) {
    this.#d = d;
    this.topic = topic;
    this.partition = partition;
    if (after !== undefined) this.#chain = after.catch(() => undefined);
  }

  get #name(): string {
    return `${this.topic}/${this.partition}`;
  }

  get #dir(): string {
    return this.#d.logs.partitionDir(this.topic, this.partition);
  }

  /** The role now (for the log store and the fetch handler). */
  openMode(): ReplicaOpenMode {
    const c = this.#current;
    if (c.kind !== "lead") return { kind: "not-leader", reason: `this node ${this.#roleText()}` };
    return {
      kind: "leader",
      gate: c.gate,
      knownHwm: c.knownHwm,
      onOpened: async (log) => {
        // A reopen (the fd budget closed it): the same leader state goes on.
        c.state?.attach(log);
      },
    };
  }

  led(): LeaderState | undefined {
    const c = this.#current;
    return c.kind === "lead" && c.state !== undefined && !c.state.stopped ? c.state : undefined;
  }

  #roleText(): string {
    const c = this.#current;
    if (c.kind === "follow") return `follows ${c.leader} at epoch ${c.epoch}`;
    if (c.kind === "lead") return `is taking over at epoch ${c.epoch}`;
    const r = this.#record;
    return r === undefined ? "holds no replica" : `does not lead (leader ${r.leader ?? "none"})`;
  }

  /** A new view of the record (undefined: this node holds no replica of it any more). */
  update(record: ReplicaAssignment | undefined, minInsync: number): void {
    if (record === undefined || record.leaderEpoch !== this.#refusedEpoch) this.#refusedEpoch = undefined;
    this.#record = record;
    this.#minInsync = minInsync;
    this.#enqueue();
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#record = undefined;
    this.#enqueue();
    return this.#chain;
  }

  #enqueue(): void {
    this.#chain = this.#chain.then(
      () => this.#reconcile(),
      () => this.#reconcile(),
    );
    this.#chain.catch((err: unknown) => {
      this.#d.logger.error(
        { topic: this.topic, partition: this.partition, err },
        "replica transition failed; retrying",
      );
      // A take-over or hand-back that failed on I/O (an fd limit, a full
      // disk) is tried again; a change of the record meanwhile also retries.
      if (this.#closed) return;
      const t = setTimeout(() => {
        if (!this.#closed) this.#enqueue();
      }, this.#d.options.retryBackoffMs * 8);
      t.unref();
    });
  }

  #desired(): Role {
    const r = this.#record;
    if (this.#closed || r === undefined) return { kind: "idle", reason: "no replica here" };
    const role = roleOf(r, this.#d.nodeId, this.#d.volumeId);
    if (role.kind === "lead" && role.epoch === this.#refusedEpoch)
      return {
        kind: "idle",
        reason: "the authority refused this epoch's ISR change; waiting for the new record",
      };
    return role;
  }

  /** What this replica does now. */
  role(): Role["kind"] {
    return this.#current.kind;
  }

  #currentRole(): Role {
    const c = this.#current;
    if (c.kind === "lead") return { kind: "lead", epoch: c.epoch };
    if (c.kind === "follow") return { kind: "follow", epoch: c.epoch, leader: c.leader };
    return { kind: "idle", reason: "" };
  }

  async #reconcile(): Promise<void> {
    const want = this.#desired();
    const c = this.#current;
    if (sameRole(want, this.#currentRole())) {
      if (c.kind === "lead" && c.state !== undefined && this.#record !== undefined) {
        if (!c.state.onRecord(this.#record, this.#minInsync)) await this.#stopLeading();
        else return;
      } else if (c.kind === "lead" && c.state === undefined) {
        // The previous attempt to take over failed: try again.
      } else return;
    }
    await this.#stopCurrent();
    if (want.kind === "lead") await this.#startLeading(want.epoch);
    else if (want.kind === "follow") this.#startFollowing(want.epoch, want.leader);
    else if (this.#record !== undefined && !this.#closed)
      this.#d.logger.info(
        { topic: this.topic, partition: this.partition, reason: want.reason },
        "replica idle",
      );
    this.#d.events?.roleChanged?.(this.topic, this.partition, this.#current.kind);
  }

  async #stopCurrent(): Promise<void> {
    const c = this.#current;
    if (c.kind === "lead") await this.#stopLeading();
    else if (c.kind === "follow") {
      c.abort.abort();
      await c.done;
      this.#current = { kind: "idle" };
    }
  }

  async #stopLeading(): Promise<void> {
    const c = this.#current;
    if (c.kind !== "lead") return;
    this.#current = { kind: "idle" };
    c.state?.stop("leadership moved");
    await this.#d.logs.closePartition(this.topic, this.partition);
    this.#d.consumers?.dropPartition(this.topic, this.partition);
    if (c.state !== undefined) {
      // The HWM this leader reached is acknowledged-safe: the fetcher must
      // never truncate below it.
      const cp = await readCheckpoint(this.#dir);
      const known = cp.ok ? cp.checkpoint : null;
      await writeCheckpoint(this.#dir, {
        leaderEpoch: Math.max(known?.leaderEpoch ?? -1, c.epoch),
        hwm: Math.max(known?.hwm ?? 0, c.state.hwm),
      });
    }
  }

  async #startLeading(epoch: number): Promise<void> {
    const record = this.#record;
    if (record === undefined) return;
    const dir = this.#dir;
    const cp = await readCheckpoint(dir);
    if (!cp.ok) throw new Error(`${dir}: ${cp.reason}`);
    const knownEpoch = cp.checkpoint?.leaderEpoch ?? -1;
    if (knownEpoch > epoch) {
      // Our view of the record is older than an epoch this replica has seen.
      this.#d.logger.warn(
        { topic: this.topic, partition: this.partition, epoch, knownEpoch },
        "not leading: the record is older than an epoch this replica has seen",
      );
      return;
    }
    const gate = new GateProxy(this.#name);
    const cur: Extract<Current, { kind: "lead" }> = {
      kind: "lead",
      epoch,
      gate,
      knownHwm: cp.checkpoint?.hwm ?? 0,
      state: undefined,
    };
    this.#current = cur;
    let log: OpenedPartitionLog;
    try {
      log = await this.#d.logs.get(this.topic, this.partition);
    } catch (err) {
      this.#current = { kind: "idle" };
      if (isLogError(err, "TOPIC_DELETED")) return;
      throw err;
    }
    const st = log.stats();
    const loaded = await readEpochFile(dir, st.nextOffset + 1);
    if (!loaded.ok) throw new Error(`${dir}: ${loaded.reason}`);
    let history: EpochHistory = loaded.history;
    if (lastEpoch(history) > epoch) {
      this.#current = { kind: "idle" };
      await this.#d.logs.closePartition(this.topic, this.partition);
      this.#d.logger.warn(
        { topic: this.topic, partition: this.partition, epoch, fileEpoch: lastEpoch(history) },
        "not leading: this replica's log holds a newer epoch than the record",
      );
      return;
    }
    // The epoch starts at the log end, durably, before anything is appended in it.
    if (lastEpoch(history) < epoch) {
      history = startEpoch(history, epoch, st.nextOffset);
      await appendEpoch(dir, epoch, st.nextOffset);
    }
    if (knownEpoch < epoch) await writeCheckpoint(dir, { leaderEpoch: epoch, hwm: st.highWatermark });
    const start = history.find((e) => e.epoch === epoch)?.startOffset ?? st.nextOffset;
    // The bound below which everything acknowledged lies, for ISR expansion:
    // the log end now, not the epoch's start. Back after a crash in its own
    // epoch, this node may have acknowledged records above the epoch's start
    // that its lazily written HWM file does not show; every one of them is
    // below its log end (ADR 0007, "Expansion at the HWM alone").
    const takeoverEnd = st.nextOffset;
    const state = new LeaderState({
      topic: this.topic,
      partition: this.partition,
      self: this.#d.nodeId,
      selfVolumeId: this.#d.volumeId,
      record,
      minInsync: this.#minInsync,
      epochStartOffset: takeoverEnd,
      history,
      hwm: st.highWatermark,
      logEnd: st.nextOffset,
      replicaLagMs: this.#d.options.replicaLagMs,
      replicationTimeoutMs: this.#d.options.replicationTimeoutMs,
      isrCheckIntervalMs: this.#d.options.isrCheckIntervalMs,
      isrRetryMs: this.#d.options.isrRetryMs,
      recordIsr: (expect, isr) => {
        const write = this.#d.metastore.recordIsr;
        if (write === undefined) return Promise.resolve({ kind: "unknown", reason: "no ISR writer" });
        return write(this.topic, this.partition, expect, isr);
      },
      nowMs: this.#d.nowMs,
      logger: this.#d.logger,
      onStopped: () => {
        this.#refusedEpoch = epoch;
        this.#enqueue();
      },
      onIsrChange: (kind) => this.#d.events?.isrChanged?.(this.topic, this.partition, kind),
    });
    cur.state = state;
    gate.target = state;
    state.attach(log);
    this.#sent.clear();
    this.#d.logger.info(
      { topic: this.topic, partition: this.partition, epoch, epochStart: start, hwm: st.highWatermark },
      "leading",
    );
  }

  #startFollowing(epoch: number, leader: string): void {
    const abort = new AbortController();
    const done = this.#followLoop(epoch, leader, abort.signal);
    this.#current = { kind: "follow", epoch, leader, abort, done };
  }

  async #followLoop(epoch: number, leader: string, signal: AbortSignal): Promise<void> {
    const o = this.#d.options;
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(t);
            resolve();
          },
          { once: true },
        );
      });
    // A leader that is down or deposed fails every retry alike: logged once per 10 s.
    const gate = new RepeatGate(10_000);
    while (!signal.aborted) {
      // A topic deleted meanwhile: its directory must not be created again
      // by a fetcher (a later namesake would adopt it). The manager stops
      // this loop once it sees the deletion; until then it only waits.
      if (this.#d.metastore.getTopic(this.topic) === undefined) {
        await sleep(o.retryBackoffMs);
        continue;
      }
      const member = this.#d.metastore.members().find((m) => m.id === leader);
      const address = member === undefined ? undefined : clusterAddressOf(member);
      if (address === undefined) {
        await sleep(o.retryBackoffMs);
        continue;
      }
      try {
        const stop = await runFollower({
          leader: this.#d.peers.peer(address),
          topic: this.topic,
          partition: this.partition,
          replicaId: this.#d.nodeId,
          volumeId: this.#d.volumeId,
          dir: this.#dir,
          nowMs: this.#d.nowMs,
          checkpointIntervalMs: o.checkpointIntervalMs,
          leaderEpoch: epoch,
          segmentBytes: o.segmentBytes,
          maxFrameBytes: o.maxFrameBytes,
          maxBytes: o.fetchMaxBytes,
          maxWaitMs: o.fetchMaxWaitMs,
          signal,
          onPositions: async (p) => {
            // Names and offsets come from another member: only a group name
            // or cursor file name this node could have written itself is
            // written (never a path out of the partition dir), and one bad
            // entry does not hold back the others.
            for (const f of p.frontiers) {
              if (!groupNamePattern.test(f.group) || !validOffset(f.offset)) {
                this.#skipped("frontier", f);
                continue;
              }
              await writeFrontier(this.#dir, f.group, f.offset);
            }
            for (const c of p.fanout_cursors) {
              if (!isCursorFileName(c.file) || !validOffset(c.next_offset)) {
                this.#skipped("fan-out cursor", c);
                continue;
              }
              await writeCursorFile(this.#dir, c.file, { epoch: c.epoch, nextOffset: c.next_offset });
            }
          },
          onProgress: (p) => {
            gate.reset();
            this.#d.events?.followerProgress?.(this.topic, this.partition, p.leaderEnd - p.logEnd);
          },
          onTruncated: (t) => {
            if (t.to < t.from)
              this.#d.logger.info(
                { topic: this.topic, partition: this.partition, epoch, from: t.from, to: t.to },
                "follower truncated a divergent tail",
              );
          },
          onReset: (r) =>
            this.#d.logger.warn(
              { topic: this.topic, partition: this.partition, from: r.from, to: r.to },
              "follower restarted its copy at the leader's oldest offset",
            ),
        });
        if (stop.reason === "aborted") return;
        const g = gate.offer(`stop ${stop.reason}`, this.#d.nowMs());
        if (g.log)
          this.#d.logger.info(
            {
              topic: this.topic,
              partition: this.partition,
              epoch,
              leader,
              reason: stop.reason,
              message: stop.message,
              repeated: g.repeated,
            },
            "follower stopped; retrying",
          );
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof TruncationRefusedError) {
          // Never cut below what this replica knows is acknowledged: stop and say so.
          this.#d.logger.error(
            { topic: this.topic, partition: this.partition, epoch, leader, err },
            "follower refused a truncation below its known HWM; not following",
          );
          return;
        }
        const g = gate.offer(`error ${(err as Error)?.message}`, this.#d.nowMs());
        if (g.log)
          this.#d.logger.warn(
            { topic: this.topic, partition: this.partition, epoch, leader, err, repeated: g.repeated },
            "follower failed; retrying",
          );
      }
      await sleep(o.retryBackoffMs);
    }
  }

  #skipped(what: string, entry: object): void {
    this.#d.logger.warn(
      { topic: this.topic, partition: this.partition, entry },
      `ignored a ${what} from the leader: not a name or offset this node writes`,
    );
  }

  /**
   * The durable positions kept with this partition that `replica` fetching
   * from `volumeId` has not been sent yet (the leader side of the
   * piggyback): consumer-group frontiers and fan-out cursors. Read at most
   * every frontierRefreshMs; all of them are sent again every resendAllMs,
   * so a lost answer is made good, and at once to a follower on another
   * volume than before (back empty: it has none of them, and a frontier that
   * stopped moving would otherwise reach it only at the next full resend).
   */
  async positionsFor(replica: string, volumeId: string): Promise<ReplicatedPositions> {
    const now = this.#d.nowMs();
    const o = this.#d.options;
    if (this.#positionCache === undefined || now - this.#positionCache.atMs >= o.frontierRefreshMs) {
      const dir = this.#dir;
      this.#positionCache = {
        atMs: now,
        frontiers: (await this.#d.consumers?.frontiers(this.topic, this.partition).catch(() => [])) ?? [],
        cursors: await listCursorFiles(dir).catch(() => []),
      };
    }
    let sent = this.#sent.get(replica);
    if (sent === undefined || sent.volumeId !== volumeId || now - sent.sinceMs >= resendAllMs) {
      sent = { sinceMs: now, volumeId, values: new Map() };
      this.#sent.set(replica, sent);
    }
    const out: ReplicatedPositions = { frontiers: [], fanout_cursors: [] };
    for (const f of this.#positionCache.frontiers) {
      const k = `g:${f.group}`;
      const v = String(f.offset);
      if (sent.values.get(k) === v) continue;
      sent.values.set(k, v);
      out.frontiers.push(f);
    }
    for (const c of this.#positionCache.cursors) {
      const k = `c:${c.file}`;
      const v = `${c.position.epoch}@${c.position.nextOffset}`;
      if (sent.values.get(k) === v) continue;
      sent.values.set(k, v);
      out.fanout_cursors.push({ file: c.file, epoch: c.position.epoch, next_offset: c.position.nextOffset });
    }
    return out;
  }
}

export class ReplicaManager {
  readonly #d: ReplicaManagerDeps;
  readonly #replicas = new Map<string, PartitionReplica>();
  /** Removals of dropped copies in flight: a replica added back waits for them. */
  readonly #removals = new Map<string, Promise<void>>();
  /** Topics whose files are being (or were) deleted, by the uid then known ("": already gone from the metastore). */
  readonly #released = new Map<string, string>();
  #closed = false;

  constructor(d: ReplicaManagerDeps) {
    this.#d = d;
  }

  /**
   * Stops every replica of `topic` before its files are deleted (the log
   * store's topic deletion): no fetcher may write into, or recreate, a
   * directory being removed. The topic's replicas come back only for
   * another incarnation (a namesake created later has another uid).
   */
  async releaseTopic(topic: string): Promise<void> {
    this.#released.set(topic, this.#d.metastore.getTopic(topic)?.uid ?? "");
    const closing: Array<Promise<void>> = [];
    for (const [key, r] of this.#replicas) {
      if (r.topic !== topic) continue;
      this.#replicas.delete(key);
      closing.push(r.close());
    }
    await Promise.allSettled([...closing, ...this.#removals.values()]);
  }

  /** Takes the current records and follows every change. */
  start(): void {
    this.#d.metastore.onChange(() => this.sync());
    this.sync();
  }

  /** Brings every replica of this node in line with the metastore's records. */
  sync(): void {
    if (this.#closed) return;
    const seen = new Set<string>();
    for (const t of this.#d.metastore.listTopics()) {
      const released = this.#released.get(t.name);
      if (released !== undefined) {
        // The incarnation whose files went stays stopped; another one (a
        // namesake created since) replicates afresh.
        if (released === t.uid) continue;
        this.#released.delete(t.name);
      }
      const { factor, minInsync } = topicReplication(t);
      if (factor <= 1) continue;
      for (let p = 0; p < t.partitions; p++) {
        const record = this.#d.metastore.replicaAssignment?.(t.name, p);
        if (record === undefined || !record.replicas.includes(this.#d.nodeId)) continue;
        const key = `${t.name}\u0000${p}`;
        seen.add(key);
        let r = this.#replicas.get(key);
        if (r === undefined) {
          r = new PartitionReplica(this.#d, t.name, p, this.#removals.get(key));
          this.#replicas.set(key, r);
        }
        r.update(record, minInsync);
      }
    }
    for (const [key, r] of this.#replicas) {
      if (seen.has(key)) continue;
      this.#replicas.delete(key);
      // Dropped from a record that still exists (a reassignment moved the
      // replica away): its copy goes too. A deleted topic's files are the
      // deletion's to remove.
      const dropped = this.#d.metastore.replicaAssignment?.(r.topic, r.partition) !== undefined;
      const removal = r
        .close()
        .then(async () => {
          if (!dropped || this.#closed) return;
          await this.#d.logs.removePartition(r.topic, r.partition);
          this.#d.logger.info(
            { topic: r.topic, partition: r.partition },
            "removed a replica this node no longer holds",
          );
        })
        .catch((err: unknown) =>
          this.#d.logger.warn(
            { topic: r.topic, partition: r.partition, err },
            "removing a dropped replica failed",
          ),
        )
        .finally(() => {
          if (this.#removals.get(key) === removal) this.#removals.delete(key);
        });
      this.#removals.set(key, removal);
    }
  }

  /** For the log store: how topic/partition may be opened now. */
  openMode(topic: string, partition: number): ReplicaOpenMode {
    const t = this.#d.metastore.getTopic(topic);
    if (t === undefined || topicReplication(t).factor <= 1) return { kind: "single" };
    const r = this.#replicas.get(`${topic}\u0000${partition}`);
    if (r === undefined) return { kind: "not-leader", reason: "holds no replica of it" };
    return r.openMode();
  }

  /** For the fetch handler: the leader state of a partition led here now. */
  ledPartition(topic: string, partition: number): LedPartition | undefined {
    return this.#replicas.get(`${topic}\u0000${partition}`)?.led();
  }

  positionsFor(
    topic: string,
    partition: number,
    replica: string,
    volumeId: string,
  ): Promise<ReplicatedPositions> {
    return (
      this.#replicas.get(`${topic}\u0000${partition}`)?.positionsFor(replica, volumeId) ??
      Promise.resolve({ frontiers: [], fanout_cursors: [] })
    );
  }

  /** What each replica does now (admin status, tests). */
  roles(): Array<{ topic: string; partition: number; role: Role["kind"]; hwm?: number }> {
    return [...this.#replicas.values()].map((r) => {
      const led = r.led();
      return {
        topic: r.topic,
        partition: r.partition,
        role: r.role(),
        ...(led !== undefined ? { hwm: led.hwm } : {}),
      };
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#replicas.values()].map((r) => r.close()));
    this.#replicas.clear();
  }
}
