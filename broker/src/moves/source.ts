// The source side of partition moves: answers the destination's manifest
// and chunk requests, and holds freezes. A freeze refuses commits (the
// partition log's PARTITION_FROZEN: dispatchers keep the records in their
// WALs and retry) and queue leasing/settling on the partition, and lapses
// ttl after its last renewal, so a dead destination or operator never wedges
// a partition. When the metastore says this node no longer owns a frozen
// partition (the operator swapped the owner), or the destination says it
// installed the copy (a handoff: this node's own view may still lag), the
// freeze is kept for good (nothing may land here any more) and the local
// copy is deleted once the new owner proves, by checksum, that it holds
// every byte of it (never on the strength of an HWM it reports).
//
// Two rules keep a destination's install safe across crashes and lag. A
// freeze in force is on disk (source-marks.ts): a restarted source freezes
// the partition again for a whole ttl before it takes a commit, because a
// destination that cannot reach it installs while the freeze is known to
// hold. And a freeze that lapses asks the authority (a quorum read, not the
// replica) who owns the partition: with a view lagging the swap, resuming
// commits would land them in a copy already given away.

import { badRequest, conflict, NaradError, topicNotFound } from "../errors.ts";
import type { OpenedPartitionLog } from "../log/partition-log.ts";
import type { AuthoritativeOwner, Metastore } from "../meta/types.ts";
import type { PbMoveManifest, PbMoveVerifyResponse, PbSegmentExtent } from "../rpc/proto.ts";
import { checksumMismatch, chunkChecksum, type SegmentChecksum, segmentChecksums } from "./checksum.ts";
import {
  freezeMarkFile,
  handoffMark,
  movedAwayFile,
  readMark,
  removeMark,
  writeMark,
} from "./source-marks.ts";

export interface MoveSourceDeps {
  nodeId: string;
  metastore: Pick<Metastore, "getTopic" | "ownerOf" | "onChange" | "listTopics" | "authoritativeOwner">;
  logs: {
    get(topic: string, partition: number): Promise<OpenedPartitionLog>;
    removePartition(topic: string, partition: number): Promise<void>;
    /** Whether the partition has a directory here. */
    exists(topic: string, partition: number): Promise<boolean>;
    partitionDir(topic: string, partition: number): string;
  };
  consumers: {
    freezePartition(topic: string, partition: number): Promise<void>;
    unfreezePartition(topic: string, partition: number): void;
    dropPartition(topic: string, partition: number): void;
    frontiers(topic: string, partition: number): Promise<Array<{ group: string; offset: number }>>;
  };
  /** MoveVerify at the partition's current owner (a peer): its checksums of these segment prefixes. */
  ownerVerify(topic: string, partition: number, segments: PbSegmentExtent[]): Promise<PbMoveVerifyResponse>;
  /** Upper bound on a requested ttl (and on a fetch's bytes below); also the freeze a restart restores from a mark without a ttl. */
  maxFreezeTtlMs: number;
  /** How soon a lapsed freeze whose owner could not be confirmed asks again (default 1 s). */
  lapseRetryMs?: number;
  maxFetchBytes: number;
  deleteDelayMs: number;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

interface Freeze {
  token: string;
  /** Uid of the topic incarnation frozen: a namesake created later is not frozen by it. */
  topicUid: string | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Set once the owner moved away: the freeze no longer lapses. */
  movedAway: boolean;
  /** The destination installed the copy: only a new install here (forget) ends the freeze. */
  handedOff: boolean;
  /** Bumped by every renewal: a lapse that awaited the authority across one is void. */
  renewals: number;
  /** The durable moved-away mark being written; a handoff is answered only once it is. */
  marked: Promise<void> | undefined;
  /** The move-freeze mark being written: no call (the first or a racing renewal) answers before it is durable. */
  durable: Promise<void> | undefined;
  /** The longest ttl granted, as the move-freeze mark records it: what a restart holds the freeze for. */
  ttlMs: number;
}

export class MoveSource {
  readonly #d: MoveSourceDeps;
  readonly #freezes = new Map<string, Freeze>();
  readonly #deletions = new Map<string, NodeJS.Timeout>();
  #closed = false;

  constructor(d: MoveSourceDeps) {
    this.#d = d;
    d.metastore.onChange(() => this.#ownershipChanged());
  }

  /**
   * A move copies from the owner, or from a former owner that still has the
   * partition (the destination finishing after the swap). Anything else
   * would hand out an empty log as if it were the partition.
   */
  async #check(topic: string, partition: number): Promise<void> {
    const t = this.#d.metastore.getTopic(topic);
    if (t === undefined) throw topicNotFound(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= t.partitions)
      throw badRequest(`partition ${partition} out of range for topic "${topic}"`);
    if (this.#d.metastore.ownerOf(topic, partition) === this.#d.nodeId) return;
    if (this.#freezes.has(`${topic}/${partition}`)) return;
    if (await this.#d.logs.exists(topic, partition)) return;
    throw conflict(`node ${this.#d.nodeId} neither owns nor holds ${topic}/${partition}`);
  }

  async manifest(topic: string, partition: number, withFrontiers = false): Promise<PbMoveManifest> {
    await this.#check(topic, partition);
    const log = await this.#d.logs.get(topic, partition);
    const st = log.stats();
    return {
      high_watermark: st.highWatermark,
      oldest_offset: st.oldestOffset,
      segments: log.segmentExtents().map((e) => ({ base: e.base, bytes: e.bytes })),
      frozen: log.frozen,
      frontiers: withFrontiers ? await this.#d.consumers.frontiers(topic, partition) : [],
      // Under the freeze the map is final (no commit runs), like the HWM.
      dedup_floor: withFrontiers
        ? [...log.committedSeqs()].map(([incarnation, seq]) => ({ incarnation, seq }))
        : [],
    };
  }

  async fetch(topic: string, partition: number, base: number, position: number, maxBytes: number) {
    await this.#check(topic, partition);
    const log = await this.#d.logs.get(topic, partition);
    const data = await log.readSegmentBytes(base, position, Math.min(maxBytes, this.#d.maxFetchBytes));
    return data === null
      ? { found: false, data: Buffer.alloc(0), crc32c: 0 }
      : { found: true, data, crc32c: chunkChecksum(data) };
  }

  /** MoveVerify: CRC-32C of the first `bytes` of each named segment of this node's copy. */
  async verify(topic: string, partition: number, segments: readonly PbSegmentExtent[]) {
    await this.#check(topic, partition);
    const log = await this.#d.logs.get(topic, partition);
    const st = log.stats();
    const sums = await segmentChecksums((b, p, n) => log.readSegmentBytes(b, p, n), segments);
    return { segments: sums, high_watermark: st.highWatermark, oldest_offset: st.oldestOffset };
  }

  /** Freezes or renews; resolves the manifest under the freeze (final HWM, flushed frontiers). */
  async freeze(
    topic: string,
    partition: number,
    token: string,
    ttlMs: number,
    handoff = false,
  ): Promise<PbMoveManifest> {
    await this.#check(topic, partition);
    if (token.length === 0 || token.length > 64) throw badRequest("freeze token must be 1..64 characters");
    const key = `${topic}/${partition}`;
    const held = this.#freezes.get(key);
    // A given-away copy stays frozen for good, so any move may renew it (a
    // restarted source re-freezes it under no token of the move finishing).
    // A freeze restored from a torn mark has no token: the first move to renew
    // it is the one that wrote it (the operator runs one move per partition).
    if (held !== undefined && held.token === "" && !held.movedAway) held.token = token;
    if (held !== undefined && held.token !== token && !held.movedAway)
      throw conflict(`${key} is frozen by another partition move`);
    // A handoff confirms a freeze the destination installed on. With none
    // held it is a stale move's (the partition moved back and was installed
    // here afresh since): taking it would freeze the live partition for good.
    if (handoff && held === undefined) throw conflict(`${key} holds no freeze to hand off`);
    const log = await this.#d.logs.get(topic, partition);
    const ttl = Math.max(1_000, Math.min(ttlMs, this.#d.maxFreezeTtlMs));
    let f = this.#freezes.get(key);
    if (f === undefined) {
      f = {
        token,
        topicUid: this.#d.metastore.getTopic(topic)?.uid,
        timer: undefined,
        movedAway: false,
        handedOff: false,
        renewals: 0,
        marked: undefined,
        durable: undefined,
        ttlMs: 0,
      };
      this.#freezes.set(key, f);
      this.#d.logger.info({ topic, partition, ttlMs: ttl }, "partition frozen for a move");
    }
    const entry = f;
    // The mark records the longest ttl granted: a restart holds the freeze that long, never less
    // than the destination counts on. Written (again) before this call answers.
    if (!entry.movedAway && ttl > entry.ttlMs) {
      const previous = entry.ttlMs;
      const before = entry.durable ?? Promise.resolve();
      entry.ttlMs = ttl;
      entry.durable = before
        .then(() =>
          writeMark(
            this.#d.logs.partitionDir(topic, partition),
            freezeMarkFile,
            JSON.stringify({ token: entry.token, topicUid: entry.topicUid, ttlMs: ttl }),
          ),
        )
        .catch((err: unknown) => {
          if (previous === 0) {
            // Not durable, so not held: no timerless entry refusing other moves; a retry writes it again.
            if (this.#freezes.get(key) === entry) this.#freezes.delete(key);
          } else if (entry.ttlMs === ttl) {
            // The older mark (a shorter ttl) stays; the next renewal writes it again.
            entry.ttlMs = previous;
            entry.durable = undefined;
          }
          throw err;
        });
    }
    await entry.durable;
    if (!entry.movedAway) {
      entry.renewals++;
      clearTimeout(entry.timer);
      entry.timer = setTimeout(() => void this.#lapse(topic, partition, entry), ttl);
      entry.timer.unref();
    }
    // Both are idempotent; a renewal also waits for any commit still running.
    await log.freeze();
    await this.#d.consumers.freezePartition(topic, partition);
    if (this.#freezes.get(key) !== entry)
      throw new NaradError("UNAVAILABLE", `the freeze of ${key} ended while it was being taken; retry`);
    // The destination installed the copy: whatever our view says, nothing may land here again.
    if (handoff) this.#handOff(topic, partition, entry);
    // A former owner finishing a move after the swap: the freeze stays, the copy goes once installed.
    else if (this.#d.metastore.ownerOf(topic, partition) !== this.#d.nodeId)
      this.#movedAway(topic, partition, entry);
    // The destination installs on this answer: the moved-away mark must survive a crash first.
    await entry.marked?.catch(() => {
      entry.marked = this.#mark(topic, partition, entry.handedOff);
      return entry.marked;
    });
    return this.manifest(topic, partition, true);
  }

  #handOff(topic: string, partition: number, f: Freeze): void {
    if (f.handedOff) return;
    f.handedOff = true;
    if (f.movedAway) {
      // Already moved away by our own view: only the mark's content changes.
      f.marked = this.#mark(topic, partition, true);
      return;
    }
    this.#movedAway(topic, partition, f);
  }

  /**
   * This node installed a fresh copy of the partition (a move back): the
   * old freeze, its deletion and its moved-away state belong to a log that
   * is gone.
   */
  forget(topic: string, partition: number): void {
    const key = `${topic}/${partition}`;
    const f = this.#freezes.get(key);
    if (f === undefined) return;
    clearTimeout(f.timer);
    clearTimeout(this.#deletions.get(key));
    this.#deletions.delete(key);
    this.#freezes.delete(key);
    this.#d.consumers.unfreezePartition(topic, partition);
  }

  /**
   * Not renewed within the ttl. Commits resume only when the authority still
   * names this node owner: the destination may have installed (the owner
   * swapped) while this node's view lags and no handoff reached it.
   */
  async #lapse(topic: string, partition: number, f: Freeze): Promise<void> {
    const key = `${topic}/${partition}`;
    const current = () => this.#freezes.get(key) === f && !f.movedAway && !this.#closed;
    if (!current()) return;
    const renewals = f.renewals;
    const read = await this.#askAuthority(topic, partition, f.topicUid);
    if (!current() || f.renewals !== renewals) return;
    if (read.kind === "unknown") {
      this.#d.logger.warn(
        { topic, partition },
        "partition move freeze lapsed, but the owner could not be confirmed: staying frozen",
      );
      f.timer = setTimeout(() => void this.#lapse(topic, partition, f), this.#d.lapseRetryMs ?? 1_000);
      f.timer.unref();
      return;
    }
    if (read.kind === "owner" && read.node !== this.#d.nodeId) {
      this.#d.logger.warn(
        { topic, partition, owner: read.node },
        "partition move freeze lapsed after the owner swapped: keeping it frozen for good",
      );
      // Moved away (the deletion pass asks the authority again before it
      // reads a lagging view's "owned again" as a move back).
      this.#movedAway(topic, partition, f);
      return;
    }
    this.#d.logger.warn({ topic, partition }, "partition move freeze lapsed (not renewed); commits resume");
    this.#end(topic, partition);
  }

  /** The owner by a quorum read; the local state where the metastore is the authority. */
  async #askAuthority(
    topic: string,
    partition: number,
    uid: string | undefined,
  ): Promise<AuthoritativeOwner> {
    const ask = this.#d.metastore.authoritativeOwner;
    if (ask === undefined) return { kind: "owner", node: this.#d.metastore.ownerOf(topic, partition) };
    return ask.call(this.#d.metastore, topic, partition, uid).catch(() => ({ kind: "unknown" }) as const);
  }

  #end(topic: string, partition: number): void {
    const key = `${topic}/${partition}`;
    const f = this.#freezes.get(key);
    if (f === undefined) return;
    clearTimeout(f.timer);
    this.#freezes.delete(key);
    this.#dropFreezeMark(topic, partition);
    this.#d.logs.get(topic, partition).then(
      (log) => log.unfreeze(),
      () => undefined,
    );
    this.#d.consumers.unfreezePartition(topic, partition);
  }

  /** Ends the freeze `token` holds; a no-op when it holds none or the owner already moved away. */
  unfreeze(topic: string, partition: number, token: string): void {
    const f = this.#freezes.get(`${topic}/${partition}`);
    if (f === undefined || f.token !== token || f.movedAway) return;
    this.#d.logger.info({ topic, partition }, "partition move freeze ended by the destination");
    this.#end(topic, partition);
  }

  /** Moved-away partitions whose local copy is still kept (waiting for the new owner to serve them). */
  heldCopies(): number {
    let n = 0;
    for (const f of this.#freezes.values()) if (f.movedAway) n++;
    return n;
  }

  /** Whether a freeze (or a moved-away hold) is in place: status and tests. */
  frozen(topic: string, partition: number): boolean {
    return this.#freezes.has(`${topic}/${partition}`);
  }

  #ownershipChanged(): void {
    for (const [key, f] of this.#freezes) {
      const [topic, p] = splitKey(key);
      const t = this.#d.metastore.getTopic(topic);
      // The frozen incarnation is gone (deleted, perhaps created again under
      // the same name): nothing of it is left to move, so the freeze ends
      // everywhere it was taken, queue consumers included. Forgetting only
      // the map entry left consume/ack answering 503 until a restart.
      if (t === undefined || (f.topicUid !== undefined && t.uid !== f.topicUid)) {
        this.#forget(topic, p, f);
        continue;
      }
      if (this.#d.metastore.ownerOf(topic, p) !== this.#d.nodeId) this.#movedAway(topic, p, f);
    }
  }

  /** Drops every trace of a freeze whose topic incarnation no longer exists. */
  #forget(topic: string, partition: number, f: Freeze): void {
    const key = `${topic}/${partition}`;
    clearTimeout(f.timer);
    this.#freezes.delete(key);
    clearTimeout(this.#deletions.get(key));
    this.#deletions.delete(key);
    // The log belongs to the deleted topic (its files are being removed); only the queue side is ours to undo.
    this.#d.consumers.unfreezePartition(topic, partition);
    this.#d.logger.info({ topic, partition }, "partition move freeze dropped: its topic was deleted");
  }

  /**
   * The owner is someone else now: keep the freeze for good (a commit racing
   * the swap must not land here) and delete the local copy once the new
   * owner serves the partition with at least our HWM.
   */
  #movedAway(topic: string, partition: number, f: Freeze): void {
    if (f.movedAway) return;
    f.movedAway = true;
    clearTimeout(f.timer);
    f.marked = this.#mark(topic, partition, f.handedOff);
    this.#d.logger.info(
      { topic, partition, owner: this.#d.metastore.ownerOf(topic, partition) },
      "moved partition has a new owner; deleting the local copy once it serves the partition",
    );
    this.#scheduleDelete(topic, partition);
  }

  /**
   * Remembered on disk: a restart before the deletion must not leave an
   * orphan copy, nor reopen a handed-off one. Resolves once durable.
   */
  #mark(topic: string, partition: number, handedOff: boolean): Promise<void> {
    const dir = this.#d.logs.partitionDir(topic, partition);
    const written = writeMark(dir, movedAwayFile, handedOff ? handoffMark : "");
    written.catch((err: unknown) =>
      this.#d.logger.warn({ topic, partition, err }, "could not mark a moved-away partition"),
    );
    return written;
  }

  #dropFreezeMark(topic: string, partition: number): void {
    removeMark(this.#d.logs.partitionDir(topic, partition), freezeMarkFile).catch((err: unknown) =>
      this.#d.logger.warn({ topic, partition, err }, "could not remove a move-freeze mark"),
    );
  }

  #scheduleDelete(topic: string, partition: number): void {
    const key = `${topic}/${partition}`;
    clearTimeout(this.#deletions.get(key));
    const timer = setTimeout(() => void this.#delete(topic, partition), this.#d.deleteDelayMs);
    timer.unref();
    this.#deletions.set(key, timer);
  }

  async #delete(topic: string, partition: number): Promise<void> {
    const key = `${topic}/${partition}`;
    this.#deletions.delete(key);
    if (this.#closed) return;
    const f = this.#freezes.get(key);
    const t = this.#d.metastore.getTopic(topic);
    if (t === undefined || (f?.topicUid !== undefined && t.uid !== f.topicUid)) {
      if (f !== undefined) this.#forget(topic, partition, f);
      return;
    }
    if (this.#d.metastore.ownerOf(topic, partition) === this.#d.nodeId) {
      if (f?.handedOff === true) {
        // Our view lags the swap the destination already acted on: stay frozen, look again later.
        this.#scheduleDelete(topic, partition);
        return;
      }
      // Owned again by our view. It may lag a swap a lapse saw through the
      // authority: only the authority's word reopens the copy.
      const read = await this.#askAuthority(topic, partition, f?.topicUid);
      if (this.#closed || this.#freezes.get(key) !== f) return;
      if (read.kind === "unknown" || (read.kind === "owner" && read.node !== this.#d.nodeId)) {
        this.#scheduleDelete(topic, partition);
        return;
      }
      // Moved back (or the topic is gone): serve it.
      if (f !== undefined) f.movedAway = false;
      this.#end(topic, partition);
      return;
    }
    try {
      // Never delete the only copy: the new owner must have installed it
      // (until then it answers PARTITION_MOVING) with every byte we have,
      // proven by its own checksums of our segments, not by its HWM.
      const log = await this.#d.logs.get(topic, partition);
      const ours = log.segmentExtents();
      const hwm = log.stats().highWatermark;
      const mine = await segmentChecksums((b, p, n) => log.readSegmentBytes(b, p, n), ours);
      const theirs = await this.#d.ownerVerify(topic, partition, ours);
      if (theirs.high_watermark < hwm)
        throw new Error(`the new owner's HWM ${theirs.high_watermark} is below ours (${hwm})`);
      const mismatch = checksumMismatch(mine, theirs.segments as SegmentChecksum[], theirs.oldest_offset);
      if (mismatch !== undefined) throw new Error(`the new owner's copy differs from ours: ${mismatch}`);
      this.#d.consumers.dropPartition(topic, partition);
      await this.#d.logs.removePartition(topic, partition);
      this.#freezes.delete(key);
      this.#d.consumers.unfreezePartition(topic, partition);
      this.#d.logger.info({ topic, partition }, "deleted the local copy of a moved-away partition");
    } catch (err) {
      this.#d.logger.info(
        { topic, partition, err: err instanceof Error ? err.message : String(err) },
        "keeping the moved-away partition: the new owner does not serve it yet",
      );
      this.#scheduleDelete(topic, partition);
    }
  }

  /**
   * After a restart: partitions this node gave away but had not deleted yet
   * (their moved-away mark) are frozen again and deleted once the new owner
   * serves them. A mark on a partition this node owns again is dropped.
   */
  async resume(): Promise<void> {
    for (const t of this.#d.metastore.listTopics()) {
      for (let p = 0; p < t.partitions; p++) {
        if (!(await this.#d.logs.exists(t.name, p))) continue;
        const dir = this.#d.logs.partitionDir(t.name, p);
        const mark = await readMark(dir, movedAwayFile);
        // A moved-away mark dropped (owned here again) leaves the freeze mark to decide.
        if (mark !== undefined && (await this.#resumeMovedAway(t.name, p, t.uid, mark === handoffMark)))
          continue;
        await this.#resumeFreeze(t.name, p, t.uid, await readMark(dir, freezeMarkFile));
      }
    }
  }

  /** Whether the partition is held (frozen, or left alone unowned); false once the mark is dropped. */
  async #resumeMovedAway(
    topic: string,
    p: number,
    uid: string | undefined,
    handedOff: boolean,
  ): Promise<boolean> {
    const owner = this.#d.metastore.ownerOf(topic, p);
    // A handed-off copy stays frozen even if our view names us owner: it
    // lags the install (a move back would have replaced the directory, mark and all).
    if (owner === this.#d.nodeId && !handedOff) {
      await removeMark(this.#d.logs.partitionDir(topic, p), movedAwayFile);
      return false;
    }
    if (owner === "" && !handedOff) return true;
    await (await this.#d.logs.get(topic, p)).freeze();
    // As any freeze: no lease taken or settled in a copy given away.
    await this.#d.consumers.freezePartition(topic, p);
    const f = this.#restored("", uid, handedOff);
    this.#freezes.set(`${topic}/${p}`, f);
    this.#movedAway(topic, p, f);
    return true;
  }

  /**
   * A freeze in force when this process died: a destination may install
   * counting on it, so it holds again for a whole ttl under its token (the
   * destination's renewals carry on) and then lapses as any freeze does.
   */
  async #resumeFreeze(
    topic: string,
    p: number,
    uid: string | undefined,
    raw: string | undefined,
  ): Promise<void> {
    if (raw === undefined) return;
    let saved: { token?: unknown; topicUid?: unknown; ttlMs?: unknown } = {};
    try {
      saved = JSON.parse(raw) as typeof saved;
    } catch {
      // A torn mark still says a freeze was in force: hold it under no token (lapse ends it).
    }
    if (typeof saved.topicUid === "string" && uid !== undefined && saved.topicUid !== uid) {
      // The mark belongs to an incarnation deleted since: nothing of it is left to move.
      await removeMark(this.#d.logs.partitionDir(topic, p), freezeMarkFile);
      return;
    }
    const token = typeof saved.token === "string" ? saved.token : "";
    await (await this.#d.logs.get(topic, p)).freeze();
    await this.#d.consumers.freezePartition(topic, p);
    // The ttl the mark records (the longest granted); a mark without one: the longest any move may ask.
    const ttl =
      typeof saved.ttlMs === "number" && Number.isFinite(saved.ttlMs)
        ? Math.max(1_000, Math.min(saved.ttlMs, this.#d.maxFreezeTtlMs))
        : this.#d.maxFreezeTtlMs;
    const f = this.#restored(token, uid, false, ttl);
    this.#freezes.set(`${topic}/${p}`, f);
    this.#d.logger.info(
      { topic, partition: p },
      "partition frozen again after a restart: a move counts on it",
    );
    if (this.#d.metastore.ownerOf(topic, p) !== this.#d.nodeId) {
      this.#movedAway(topic, p, f);
      return;
    }
    f.timer = setTimeout(() => void this.#lapse(topic, p, f), ttl);
    f.timer.unref();
  }

  #restored(token: string, topicUid: string | undefined, handedOff: boolean, ttlMs = 0): Freeze {
    return {
      token,
      topicUid,
      timer: undefined,
      movedAway: false,
      handedOff,
      renewals: 0,
      marked: undefined,
      durable: undefined,
      ttlMs,
    };
  }

  close(): void {
    this.#closed = true;
    for (const f of this.#freezes.values()) clearTimeout(f.timer);
    for (const t of this.#deletions.values()) clearTimeout(t);
    this.#deletions.clear();
  }
}

function splitKey(key: string): [string, number] {
  const i = key.lastIndexOf("/");
  return [key.slice(0, i), Number(key.slice(i + 1))];
}
