// The pure half of the dispatcher (ARCHITECTURE.md §3, §5): given the WAL
// records of one pass, decide what to commit where, what to hold, what to
// reroute and what needs a deletion check; and the checkpoint arithmetic that
// follows. No I/O and no clock: dispatch/pass.ts does both.
//
// Invariants this module upholds (and its tests check):
//  I1  Nothing is ever dropped by the planner: every input record ends up in
//      exactly one of lanes / held / reroutes / missingTopics.
//  I2  Within one (topic, partition) the records of a lane are in seq order.
//      The owner's dedup keeps only the highest seq it committed per ingress
//      incarnation, so a lower seq sent after a higher one would be silently
//      dropped as a "duplicate". The dispatcher therefore (a) re-plans every
//      pass from the checkpoint so a lane always carries every undone record of
//      its partition below the pass's read end, (b) commits a lane's batches in
//      order and stops at the first failure, and (c) never commits a rerouted
//      record under its old seq: a reroute re-appends the record to the WAL
//      (new, higher seq) aimed at the sibling, then marks the old seq done.
//  I3  The checkpoint only moves over seqs that are done (committed, rerouted
//      into the WAL, discarded after a confirmed topic deletion, or absent from
//      the WAL); done seqs above it wait in the skip-set.
//  I4  A record whose last commit to an owner failed without an answer (the
//      owner may have made it durable before dying: "in doubt") is never
//      rerouted away from a Down or failing owner while the dispatcher still
//      holds it in doubt: a copy in a sibling partition next to one the owner
//      did store is a duplicate that no dedup can see. It is held until the
//      owner answers again (its dedup acknowledges what it already has) or
//      the hold expires (dispatch/in-doubt-holds.ts bounds it). A Removed owner's data is
//      gone, so nothing is in doubt there.
//  I5  A record is committed only into the topic incarnation it was accepted
//      for. resolve() gets the record's topic uid and answers topic-missing
//      when the topic of that name now has another uid (deleted and created
//      again); such records go to missingTopics under their own uid, where
//      only a confirmed deletion of that incarnation discards them. A record
//      without a uid (WAL written before uids) follows the name, as before.
//      Every commit record carries the uid its lane resolved to, so the owner
//      can refuse a commit when its own view of the topic differs.

import { fnv1a32 } from "./partitioner.ts";
import type { CommitRecord, WalRecord } from "./records.ts";

// ---------------------------------------------------------------------------
// Destinations

export type MemberState = "Active" | "Joining" | "Maintenance" | "Down" | "Decommissioning" | "Removed";

/** Where a (topic, partition) lives right now, as the local membership/assignment replica sees it. */
export type Destination =
  | {
      kind: "owner";
      nodeId: string;
      state: MemberState;
      /** Uid of the topic incarnation this destination belongs to (absent: a resolver without uids). */
      topicUid?: string;
      /**
       * The partition is replicated (ADR 0007): `nodeId` is its leader. Its
       * records are never rerouted to a sibling: a lost leader is replaced
       * by an election, and the records wait for the new one.
       */
      replicated?: boolean;
    }
  | { kind: "topic-missing" };

// ---------------------------------------------------------------------------
// Skip-set: sorted, disjoint, non-adjacent half-open ranges [from, to) of seqs
// above the checkpoint that are already done. Ranges rather than a Set<number>
// because done seqs come in long runs (everything but a stuck partition), so
// the memory stays small even at the lookahead bound.

export interface SeqRange {
  from: number;
  /** Exclusive. */
  to: number;
}

export type SkipSet = readonly SeqRange[];

/** Index of the first range with to > seq (binary search). */
function firstRangeEndingAfter(skip: SkipSet, seq: number): number {
  let lo = 0;
  let hi = skip.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (skip[mid]!.to <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function skipHas(skip: SkipSet, seq: number): boolean {
  const r = skip[firstRangeEndingAfter(skip, seq)];
  return r !== undefined && r.from <= seq;
}

/** The first seq >= `seq` that is not in the skip-set. */
export function skipNextFree(skip: SkipSet, seq: number): number {
  const r = skip[firstRangeEndingAfter(skip, seq)];
  return r !== undefined && r.from <= seq ? r.to : seq;
}

/** How many seqs the skip-set holds. */
export function skipSize(skip: SkipSet): number {
  let n = 0;
  for (const r of skip) n += r.to - r.from;
  return n;
}

/** Turns seqs (any order, duplicates allowed) into sorted, merged ranges. */
export function seqsToRanges(seqs: readonly number[]): SeqRange[] {
  const sorted = [...seqs].sort((a, b) => a - b);
  const out: SeqRange[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && s <= last.to) {
      if (s === last.to) last.to = s + 1;
    } else {
      out.push({ from: s, to: s + 1 });
    }
  }
  return out;
}

/** Union of the skip-set and more done ranges (any order, may overlap). */
export function skipAddRanges(skip: SkipSet, ranges: readonly SeqRange[]): SkipSet {
  const all = [...skip, ...ranges.filter((r) => r.to > r.from)].sort((a, b) => a.from - b.from);
  const out: SeqRange[] = [];
  for (const r of all) {
    const last = out[out.length - 1];
    if (last !== undefined && r.from <= last.to) {
      if (r.to > last.to) last.to = r.to;
    } else {
      out.push({ from: r.from, to: r.to });
    }
  }
  return out;
}

export function skipAddSeqs(skip: SkipSet, seqs: readonly number[]): SkipSet {
  return seqs.length === 0 ? skip : skipAddRanges(skip, seqsToRanges(seqs));
}

/**
 * Moves the checkpoint over every done seq contiguous with it and prunes the
 * skip-set of everything below the result. The checkpoint never moves back.
 */
/** A saved done-set's ranges that still mean something: inside [checkpoint, nextSeq), merged. */
/**
 * `skip` without the seqs of `sorted` (ascending by seq; only those within skip's span are visited). The done-set on disk must
 * hold only seqs done outside the parked store: a parked seq counts done for
 * the checkpoint, but at open the parked store ignores parked records the WAL
 * still holds at or above its checkpoint (they are dispatched from the WAL),
 * so a saved parked seq above a checkpoint that did not move (a crash before
 * the checkpoint write, a malformed checkpoint file reset to 1) would be
 * skipped by the WAL and dropped by the parked store.
 */
export function skipWithout(skip: SkipSet, sorted: readonly { seq: number }[]): SkipSet {
  if (skip.length === 0 || sorted.length === 0) return skip;
  let lo = 0;
  let hi = sorted.length;
  const start = skip[0]!.from;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.seq < start) lo = mid + 1;
    else hi = mid;
  }
  if (lo === sorted.length) return skip;
  const out: SeqRange[] = [];
  let i = lo;
  for (const r of skip) {
    let from = r.from;
    while (i < sorted.length && sorted[i]!.seq < r.to) {
      const s = sorted[i]!.seq;
      if (s >= from) {
        if (s > from) out.push({ from, to: s });
        from = s + 1;
      }
      i++;
    }
    if (from < r.to) out.push({ from, to: r.to });
  }
  return out;
}

export function clipDoneSet(ranges: readonly SeqRange[], checkpoint: number, nextSeq: number): SkipSet {
  const clipped = ranges
    .map((r) => ({ from: Math.max(r.from, checkpoint), to: Math.min(r.to, nextSeq) }))
    .filter((r) => r.to > r.from);
  return skipAddRanges([], clipped);
}

export function advanceCheckpoint(checkpoint: number, skip: SkipSet): { checkpoint: number; skip: SkipSet } {
  let cp = checkpoint;
  let i = 0;
  while (i < skip.length && skip[i]!.from <= cp) {
    if (skip[i]!.to > cp) cp = skip[i]!.to;
    i++;
  }
  return { checkpoint: cp, skip: i === 0 ? skip : skip.slice(i) };
}

// ---------------------------------------------------------------------------
// Window sizing and lookahead

export interface WindowOptions {
  /** Base window (records per pass). */
  windowRecords: number;
  /** Hard cap on the window. */
  windowCapRecords: number;
  /** The window grows to this many records per partition seen with traffic. */
  targetPerPartition: number;
}

/** Next pass's window: targetPerPartition × partitions-with-traffic, clamped to [base, cap]. */
export function nextWindowRecords(partitionsWithTraffic: number, o: WindowOptions): number {
  const want = o.targetPerPartition * partitionsWithTraffic;
  return Math.min(o.windowCapRecords, Math.max(o.windowRecords, want));
}

/**
 * First seq a pass may not read (exclusive). The checkpoint is the oldest
 * undone record; a pass may look at most `lookaheadWindows` windows past the
 * window that holds it, which bounds the skip-set to that many seqs.
 */
export function lookaheadLimit(checkpoint: number, windowRecords: number, lookaheadWindows: number): number {
  return checkpoint + (1 + lookaheadWindows) * windowRecords;
}

// ---------------------------------------------------------------------------
// Per-lane decision

export type HoldReason = "maintenance" | "no-live-sibling" | "in-doubt" | "idempotent" | "awaiting-leader";
export type RerouteReason = "owner-down" | "owner-removed" | "owner-failing";

export type LaneDecision =
  | { action: "commit" }
  | { action: "hold"; reason: HoldReason }
  | { action: "reroute"; reason: RerouteReason };

/**
 * The §5 rule for one owner. A local owner is always committed to: its log is
 * on this node's volume, whatever membership says (a node in Maintenance must
 * still drain its own WAL). For a peer: Down/Removed reroute at once;
 * Maintenance is held and never rerouted (a rolling restart must not scatter
 * keys); a destination that failed `rerouteAfterPasses` passes in a row is
 * rerouted only if membership also says the owner is not Active, otherwise
 * it is retried (we never conclude on our own that a peer is dead).
 */
export function decideLane(
  owner: { state: MemberState; local: boolean; replicated?: boolean },
  failedPasses: number,
  rerouteAfterPasses: number,
): LaneDecision {
  if (owner.local) return { action: "commit" };
  if (owner.replicated === true) {
    // A replicated partition's records wait for a leader (the operator
    // elects one when this one is Down); a copy elsewhere would reorder keys
    // and a sibling has its own replicas. A failing leader is retried.
    if (owner.state === "Down" || owner.state === "Removed")
      return { action: "hold", reason: "awaiting-leader" };
    if (owner.state === "Maintenance") return { action: "hold", reason: "maintenance" };
    return { action: "commit" };
  }
  switch (owner.state) {
    case "Down":
      return { action: "reroute", reason: "owner-down" };
    case "Removed":
      return { action: "reroute", reason: "owner-removed" };
    case "Maintenance":
      return { action: "hold", reason: "maintenance" };
    case "Active":
      return { action: "commit" };
    case "Joining":
    case "Decommissioning":
      return failedPasses >= rerouteAfterPasses
        ? { action: "reroute", reason: "owner-failing" }
        : { action: "commit" };
  }
}

/**
 * Picks the sibling for a rerouted record: the key's FNV-1a hash over the live
 * siblings (sorted). Deterministic, keeps one key together while the set of
 * live siblings is stable, and spreads keys across all of them.
 */
export function chooseSibling(key: Uint8Array, liveSiblings: readonly number[]): number | undefined {
  if (liveSiblings.length === 0) return undefined;
  return liveSiblings[fnv1a32(key) % liveSiblings.length];
}

// ---------------------------------------------------------------------------
// Planning one pass

/** Serialised size of a record beyond key and payload (ids, timestamps, lengths); used for byte caps. */
export const commitRecordOverheadBytes = 48;

export function commitRecordBytes(r: { key: Uint8Array; payload: Uint8Array }): number {
  return r.key.length + r.payload.length + commitRecordOverheadBytes;
}

export function laneKey(topic: string, partition: number, nodeId: string): string {
  return `${topic}\u0000${partition}\u0000${nodeId}`;
}

export interface CommitBatch {
  records: CommitRecord[];
  bytes: number;
}

/** Every record of one (topic, partition) for one owner in this pass, split into byte-capped batches in seq order. */
export interface CommitLane {
  key: string;
  topic: string;
  /** The incarnation the lane resolved to; every record of its batches carries it. */
  topicUid?: string;
  partition: number;
  nodeId: string;
  local: boolean;
  batches: CommitBatch[];
  records: number;
}

export interface HeldGroup {
  laneKey: string;
  topic: string;
  partition: number;
  nodeId: string;
  reason: HoldReason;
  count: number;
  firstSeq: number;
}

export interface RerouteMove {
  record: WalRecord;
  toPartition: number;
}

export interface RerouteGroup {
  laneKey: string;
  topic: string;
  /** The incarnation the group resolved to: the re-appended copies carry it. */
  topicUid?: string;
  fromPartition: number;
  nodeId: string;
  reason: RerouteReason;
  /** In seq order, so re-appending them keeps their relative order. */
  moves: RerouteMove[];
}

export interface MissingTopic {
  topic: string;
  /** The incarnation whose deletion must be confirmed; absent for uid-less (pre-uid) records. */
  topicUid?: string;
  seqs: number[];
}

export interface PlanOptions extends WindowOptions {
  rerouteAfterPasses: number;
  /** Byte cap of one commit batch; a single larger record still gets a batch of its own. */
  maxBatchBytes: number;
}

export interface PlanInput {
  /** Undone records of this pass, in seq order (the skip-set already applied). */
  records: readonly WalRecord[];
  incarnation: string;
  localNodeId: string;
  /** Where (topic, partition) of incarnation `topicUid` lives; topic-missing when that incarnation is gone (I5). */
  resolve: (topic: string, partition: number, topicUid?: string) => Destination;
  partitionCount: (topic: string) => number;
  /** Consecutive failed passes per lane key. */
  failures: ReadonlyMap<string, number>;
  /**
   * Whether a record's last commit to this partition ended without an answer
   * and is still held in doubt (I4). Per partition, not per lane: the doubt
   * survives an owner change (a move carries the data, a landed commit too).
   */
  inDoubt?: (topic: string, partition: number, seq: number) => boolean;
  options: PlanOptions;
}

export interface DispatchPlan {
  /** Lanes to commit, ordered by their first seq. */
  lanes: CommitLane[];
  held: HeldGroup[];
  reroutes: RerouteGroup[];
  missingTopics: MissingTopic[];
  /** Every lane key that had records this pass (committed, held or rerouted). */
  laneKeys: string[];
  partitionsWithTraffic: number;
  nextWindowRecords: number;
}

interface LaneDraft {
  topic: string;
  topicUid: string | undefined;
  partition: number;
  nodeId: string;
  local: boolean;
  state: MemberState;
  replicated: boolean;
  records: WalRecord[];
}

function toCommitRecord(r: WalRecord, incarnation: string, topicUid: string | undefined): CommitRecord {
  const c: CommitRecord = { key: r.key, createdMs: r.createdMs, payload: r.payload, incarnation, seq: r.seq };
  if (r.producer !== undefined) c.producer = r.producer;
  if (topicUid !== undefined) c.topicUid = topicUid;
  return c;
}

/** Splits a lane's records (seq order) into batches of at most maxBatchBytes. */
export function splitBatches(
  records: readonly WalRecord[],
  incarnation: string,
  maxBatchBytes: number,
  topicUid?: string,
): CommitBatch[] {
  const out: CommitBatch[] = [];
  let cur: CommitBatch = { records: [], bytes: 0 };
  for (const r of records) {
    const size = commitRecordBytes(r);
    if (cur.records.length > 0 && cur.bytes + size > maxBatchBytes) {
      out.push(cur);
      cur = { records: [], bytes: 0 };
    }
    cur.records.push(toCommitRecord(r, incarnation, topicUid));
    cur.bytes += size;
  }
  if (cur.records.length > 0) out.push(cur);
  return out;
}

/**
 * Plans one pass. Resolves each (topic, partition) once, so every record of a
 * partition gets the same decision within the pass (I2).
 */
export function planDispatch(input: PlanInput): DispatchPlan {
  const { options: o } = input;
  const destCache = new Map<string, Destination>();
  const resolve = (topic: string, partition: number, topicUid?: string): Destination => {
    const k = `${topic}\u0000${partition}\u0000${topicUid ?? ""}`;
    let d = destCache.get(k);
    if (d === undefined) {
      d = input.resolve(topic, partition, topicUid);
      destCache.set(k, d);
    }
    return d;
  };

  const drafts = new Map<string, LaneDraft>();
  const missing = new Map<string, MissingTopic>();
  const partitions = new Set<string>();
  for (const r of input.records) {
    partitions.add(`${r.topic}\u0000${r.partition}`);
    const d = resolve(r.topic, r.partition, r.topicUid);
    if (d.kind === "topic-missing") {
      const mk = `${r.topic}\u0000${r.topicUid ?? ""}`;
      const m = missing.get(mk);
      if (m !== undefined) m.seqs.push(r.seq);
      else if (r.topicUid === undefined) missing.set(mk, { topic: r.topic, seqs: [r.seq] });
      else missing.set(mk, { topic: r.topic, topicUid: r.topicUid, seqs: [r.seq] });
      continue;
    }
    const key = laneKey(r.topic, r.partition, d.nodeId);
    let draft = drafts.get(key);
    if (draft === undefined) {
      draft = {
        topic: r.topic,
        // A uid-less record takes the uid of the incarnation it resolved to.
        topicUid: d.topicUid ?? r.topicUid,
        partition: r.partition,
        nodeId: d.nodeId,
        local: d.nodeId === input.localNodeId,
        state: d.state,
        replicated: d.replicated === true,
        records: [],
      };
      drafts.set(key, draft);
    }
    draft.records.push(r);
  }

  const liveCache = new Map<string, number[]>();
  const liveSiblings = (topic: string): number[] => {
    let live = liveCache.get(topic);
    if (live === undefined) {
      live = [];
      const n = input.partitionCount(topic);
      for (let p = 0; p < n; p++) {
        const d = resolve(topic, p);
        if (d.kind !== "owner" || d.state !== "Active") continue;
        if ((input.failures.get(laneKey(topic, p, d.nodeId)) ?? 0) > 0) continue;
        live.push(p);
      }
      liveCache.set(topic, live);
    }
    return live;
  };

  const lanes: CommitLane[] = [];
  const held: HeldGroup[] = [];
  const reroutes: RerouteGroup[] = [];
  for (const [key, d] of drafts) {
    const decision = decideLane(d, input.failures.get(key) ?? 0, o.rerouteAfterPasses);
    if (decision.action === "commit") {
      lanes.push({
        key,
        topic: d.topic,
        ...(d.topicUid === undefined ? {} : { topicUid: d.topicUid }),
        partition: d.partition,
        nodeId: d.nodeId,
        local: d.local,
        batches: splitBatches(d.records, input.incarnation, o.maxBatchBytes, d.topicUid),
        records: d.records.length,
      });
      continue;
    }
    if (decision.action === "reroute") {
      const live = liveSiblings(d.topic).filter((p) => p !== d.partition);
      if (live.length > 0) {
        const inDoubt = input.inDoubt;
        const doubted =
          inDoubt === undefined || decision.reason === "owner-removed"
            ? []
            : d.records.filter((r) => inDoubt(d.topic, d.partition, r.seq));
        if (doubted.length > 0) {
          held.push({
            laneKey: key,
            topic: d.topic,
            partition: d.partition,
            nodeId: d.nodeId,
            reason: "in-doubt",
            count: doubted.length,
            firstSeq: doubted[0]!.seq,
          });
        }
        const unsure =
          doubted.length === 0 ? d.records : d.records.filter((r) => !inDoubt?.(d.topic, d.partition, r.seq));
        // An idempotent producer's record is never rerouted: its stamp is per
        // partition, so a copy goes unstamped and a retry of its request
        // (which times out: the copy has a new seq) is stored again.
        const stamped = unsure.filter((r) => r.producer !== undefined);
        if (stamped.length > 0) {
          held.push({
            laneKey: key,
            topic: d.topic,
            partition: d.partition,
            nodeId: d.nodeId,
            reason: "idempotent",
            count: stamped.length,
            firstSeq: stamped[0]!.seq,
          });
        }
        const rest = stamped.length === 0 ? unsure : unsure.filter((r) => r.producer === undefined);
        if (rest.length === 0) continue;
        const moves = rest.map((record) => ({ record, toPartition: chooseSibling(record.key, live)! }));
        reroutes.push({
          laneKey: key,
          topic: d.topic,
          ...(d.topicUid === undefined ? {} : { topicUid: d.topicUid }),
          fromPartition: d.partition,
          nodeId: d.nodeId,
          reason: decision.reason,
          moves,
        });
        continue;
      }
    }
    held.push({
      laneKey: key,
      topic: d.topic,
      partition: d.partition,
      nodeId: d.nodeId,
      reason: decision.action === "hold" ? decision.reason : "no-live-sibling",
      count: d.records.length,
      firstSeq: d.records[0]!.seq,
    });
  }

  return {
    lanes,
    held,
    reroutes,
    missingTopics: [...missing.values()],
    laneKeys: [...drafts.keys()],
    partitionsWithTraffic: partitions.size,
    nextWindowRecords: nextWindowRecords(partitions.size, o),
  };
}

/**
 * Failure counts for the next pass: a lane that was attempted and failed
 * counts one more, a lane that succeeded starts over, a lane with records that
 * was not attempted (held, rerouted) keeps its count, and a lane with no
 * records any more is forgotten (so the map stays as small as the pass).
 */
export function nextFailures(
  prev: ReadonlyMap<string, number>,
  laneKeysSeen: readonly string[],
  attempted: ReadonlyMap<string, boolean>,
): Map<string, number> {
  const next = new Map<string, number>();
  for (const key of laneKeysSeen) {
    const ok = attempted.get(key);
    const before = prev.get(key) ?? 0;
    if (ok === undefined) {
      if (before > 0) next.set(key, before);
    } else if (!ok) {
      next.set(key, before + 1);
    }
  }
  return next;
}

// ---------------------------------------------------------------------------
// Parking held lanes (issue #13 item 5). Kept apart from the planning above:
// these decide which undone records leave the WAL for the parked store
// (dispatch/parked-store.ts) so the checkpoint can pass them, and how parked
// records re-enter a pass. Pure, for the dispatcher and the simulation.

/** Why a pass's WAL read stopped (dispatch/window-reader.ts). */
export type ReadStop = "end" | "window" | "bytes" | "limit";

/**
 * Merges parked records (all below the read's records or in its skip-set, so
 * the two never share a seq) with the pass's WAL records into one seq-ordered
 * list. A parked partition's records are always a prefix of its undone
 * records (parking takes every undone record of the pass up to where the
 * read stopped), so a lane built from this list is still in seq order (I2).
 */
export function mergeBySeq(a: readonly WalRecord[], b: readonly WalRecord[]): WalRecord[] {
  if (a.length === 0) return b as WalRecord[];
  if (b.length === 0) return a as WalRecord[];
  const out: WalRecord[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.seq < b[j]!.seq)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}

/**
 * The records a pass parks: when the read could not reach the end of the
 * WAL (the window, the byte budget or the lookahead stopped it), every
 * record of the pass still undone after it (held, failing, unconfirmed
 * deletion) and not parked yet. Parking them lets the checkpoint, and so
 * the lookahead, move on; a read that reached the end has nothing to
 * unblock, and parking there would only cost an fsync.
 */
export function recordsToPark(input: {
  stoppedBy: ReadStop;
  records: readonly WalRecord[];
  isDone: (seq: number) => boolean;
  isParked: (seq: number) => boolean;
}): WalRecord[] {
  if (input.stoppedBy === "end") return [];
  return input.records.filter((r) => !input.isDone(r.seq) && !input.isParked(r.seq));
}

export type StallReason = HoldReason | "commit-failing" | "moving";

/** One lane that made no progress in a pass, for metrics and /admin/v1/status. */
export interface StalledLane {
  topic: string;
  partition: number;
  nodeId: string;
  reason: StallReason;
  records: number;
  /** createdMs of its oldest record. */
  oldestCreatedMs: number;
}

/**
 * The lanes a pass left undone: held groups, and committed lanes whose
 * commit failed (reason "commit-failing", or "moving" for a move's freeze).
 */
export function stalledLanes(
  plan: Pick<DispatchPlan, "held" | "lanes">,
  failed: ReadonlyMap<string, "commit-failing" | "moving">,
  createdMsOf: (seq: number) => number | undefined,
): StalledLane[] {
  const out: StalledLane[] = [];
  for (const h of plan.held)
    out.push({
      topic: h.topic,
      partition: h.partition,
      nodeId: h.nodeId,
      reason: h.reason,
      records: h.count,
      oldestCreatedMs: createdMsOf(h.firstSeq) ?? 0,
    });
  for (const l of plan.lanes) {
    const reason = failed.get(l.key);
    if (reason === undefined) continue;
    const first = l.batches[0]?.records[0];
    out.push({
      topic: l.topic,
      partition: l.partition,
      nodeId: l.nodeId,
      reason,
      records: l.records,
      oldestCreatedMs: first?.createdMs ?? 0,
    });
  }
  return out;
}
