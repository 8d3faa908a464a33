// The destination side of partition moves (the operator's
// PUT /admin/v1/moves/{topic}/{partition} lands here). One Move per
// partition runs: catch-up copy rounds (core/move-plan.ts decides when to
// freeze), freeze the source, copy the rest, verify → `ready`; while ready
// it renews the freeze; when the metastore names this node owner it checks
// the source once more and installs the staged copy as the live partition
// → `done`. From the PUT until done the log store holds the partition
// (PARTITION_MOVING), so this node never opens an empty log for a partition
// whose data is still on the source.

import { randomBytes } from "node:crypto";
import {
  type CatchUpLimits,
  type Chunk,
  catchUpStep,
  copyComplete,
  freshCatchUp,
  planCopy,
} from "../core/move-plan.ts";
import { clusterAddressOf } from "../core/routing.ts";
import { badRequest, conflict, NaradError, notFound, topicNotFound } from "../errors.ts";
import type { Metastore } from "../meta/types.ts";
import type { PeerClient } from "../rpc/client.ts";
import type { PbMoveFetchResponse, PbMoveManifest } from "../rpc/proto.ts";
import { chunkChecksum, type SegmentChecksum } from "./checksum.ts";
import {
  discardOthers,
  discardStaged,
  finalizeStaged,
  readMarkers,
  removeStagedSegment,
  resetStagedSegment,
  type StagedLogOptions,
  stagedExtents,
  stagingDir,
  writeChunk,
  writeMarker,
} from "./staging.ts";

export type MoveState = "copying" | "ready" | "done" | "failed" | "cancelled";

export interface MoveStatus {
  topic: string;
  partition: number;
  from: string;
  state: MoveState;
  copiedBytes: number;
  sourceHwm: number;
  destHwm: number;
  rounds: number;
  error?: string;
}

export interface MoveTiming {
  chunkBytes: number;
  catchUp: CatchUpLimits;
  freezeTtlMs: number;
  renewIntervalMs: number;
  retryMs: number;
}

export interface MoveManagerDeps {
  nodeId: string;
  dataDir: string;
  metastore: Pick<Metastore, "getTopic" | "ownerOf" | "members" | "onChange" | "caughtUp">;
  logs: {
    hold(topic: string, partition: number): () => void;
    install(topic: string, partition: number, fromDir: string): Promise<void>;
  };
  consumers: { dropPartition(topic: string, partition: number): void };
  /** This node installed a moved-in copy (the source side forgets any freeze of an older copy here). */
  onInstalled?(topic: string, partition: number): void;
  peers: { peer(address: string): PeerClient };
  log: StagedLogOptions;
  timing: MoveTiming;
  logger: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
}

const terminal = (s: MoveState): boolean => s === "done" || s === "failed" || s === "cancelled";

/**
 * Finished moves (done, failed, cancelled) kept for GET and an idempotent
 * PUT; beyond this the oldest finished are forgotten (GET answers 404, as
 * after a restart). The operator runs a handful of moves at a time and
 * reads each one's end within seconds, so this is far more than it needs,
 * and the map no longer grows with every move a long-lived node ever ran.
 */
export const maxFinishedMoves = 256;

class Stopped extends Error {}

class Move {
  readonly topic: string;
  readonly partition: number;
  readonly from: string;
  readonly token: string;
  state: MoveState = "copying";
  copiedBytes = 0;
  sourceHwm = 0;
  destHwm = 0;
  rounds = 0;
  error: string | undefined;
  /** copiedBytes when the staged copy last passed verification (at destHwm). */
  verifiedBytes: number | undefined;
  /** The source's checksums the staged copy last matched (re-verified at install). */
  verifiedChecksums: SegmentChecksum[] = [];
  /** The frozen source's dedup floor at that verification. */
  verifiedFloor: ReadonlyArray<{ incarnation: string; seq: number }> = [];
  /** The source confirmed the handoff (its freeze can no longer lapse). */
  handedOff = false;
  /** When the source last confirmed the freeze (ms); 0 when not frozen by us. */
  frozenAt = 0;
  stopping = false;
  release: (() => void) | undefined;
  run: Promise<void> = Promise.resolve();
  #wake: (() => void) | undefined;

  constructor(topic: string, partition: number, from: string, token = randomBytes(8).toString("hex")) {
    this.topic = topic;
    this.partition = partition;
    this.from = from;
    this.token = token;
  }

  status(): MoveStatus {
    return {
      topic: this.topic,
      partition: this.partition,
      from: this.from,
      state: this.state,
      copiedBytes: this.copiedBytes,
      sourceHwm: this.sourceHwm,
      destHwm: this.destHwm,
      rounds: this.rounds,
      ...(this.error !== undefined ? { error: this.error } : {}),
    };
  }

  /** Sleeps up to ms; wake() (owner change, cancel) ends it early. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      t.unref();
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    });
  }

  wake(): void {
    this.#wake?.();
  }
}

export class MoveManager {
  readonly #d: MoveManagerDeps;
  readonly #moves = new Map<string, Move>();
  #closed = false;

  /** Finished moves' keys, oldest finish first (the eviction order). */
  readonly #finished = new Set<string>();

  constructor(d: MoveManagerDeps) {
    this.#d = d;
    d.metastore.onChange(() => {
      for (const m of this.#moves.values()) if (!terminal(m.state)) m.wake();
    });
  }

  /** Resumes moves a restart interrupted (their markers) and removes other leftovers. */
  async recover(): Promise<void> {
    const markers = await readMarkers(this.#d.dataDir);
    await discardOthers(this.#d.dataDir, new Set(markers.map((m) => `${m.topic}/${m.partition}`)));
    for (const m of markers) {
      // The loop fails (and discards) a move whose topic is gone, once the replica is known fresh.
      this.#d.logger.info({ ...m }, "resuming an interrupted partition move");
      this.#launch(new Move(m.topic, m.partition, m.from, m.token));
    }
  }

  get(topic: string, partition: number): MoveStatus | undefined {
    this.#pruneFinished();
    return this.#moves.get(`${topic}/${partition}`)?.status();
  }

  list(): MoveStatus[] {
    this.#pruneFinished();
    return [...this.#moves.values()].map((m) => m.status());
  }

  /** Notes newly finished moves and forgets the oldest beyond maxFinishedMoves. */
  #pruneFinished(): void {
    for (const [key, m] of this.#moves)
      if (terminal(m.state) && !this.#finished.has(key)) this.#finished.add(key);
    for (const key of this.#finished) {
      if (this.#finished.size <= maxFinishedMoves) break;
      this.#finished.delete(key);
      const m = this.#moves.get(key);
      if (m !== undefined && terminal(m.state)) this.#moves.delete(key);
    }
  }

  /** PUT: starts a move (idempotent for the same source). */
  async start(topic: string, partition: number, from: string): Promise<MoveStatus> {
    if (this.#closed)
      throw new NaradError("UNAVAILABLE", "broker is shutting down", { retryAfterSeconds: 1 });
    const t = this.#d.metastore.getTopic(topic);
    if (t === undefined) throw topicNotFound(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= t.partitions)
      throw badRequest(
        `partition ${partition} out of range for topic "${topic}" (${t.partitions} partitions)`,
      );
    if (from === this.#d.nodeId) throw badRequest("from names this node; a move copies from another member");
    if (!this.#d.metastore.members().some((m) => m.id === from))
      throw badRequest(`from "${from}" is not a member of the cluster`);
    const key = `${topic}/${partition}`;
    const existing = this.#moves.get(key);
    const owner = this.#d.metastore.ownerOf(topic, partition);
    if (existing !== undefined && !terminal(existing.state)) {
      if (existing.from === from) return existing.status();
      throw conflict(`a move of ${key} from "${existing.from}" is already running`);
    }
    if (owner === this.#d.nodeId) {
      if (existing?.state === "done" && existing.from === from) return existing.status();
      throw conflict(`this node already owns ${key}`);
    }
    // A stale `from` would copy a partition that is not the live one.
    if (owner !== from) throw conflict(`"${from}" does not own ${key} (owner: ${owner || "none"})`);
    const move = new Move(topic, partition, from);
    // Registered before the first await, so a concurrent identical PUT finds it.
    this.#moves.set(key, move);
    this.#finished.delete(key);
    this.#pruneFinished();
    try {
      await writeMarker(this.#d.dataDir, { topic, partition, from, token: move.token });
    } catch (err) {
      this.#moves.delete(key);
      throw err;
    }
    this.#launch(move);
    return move.status();
  }

  /** DELETE: cancels a move that has not been installed. */
  async cancel(topic: string, partition: number): Promise<MoveStatus> {
    const key = `${topic}/${partition}`;
    const m = this.#moves.get(key);
    if (m === undefined) throw notFound(`no move of ${key} is known here`);
    if (m.state === "done") throw conflict(`the move of ${key} is done; move it back instead`);
    if (terminal(m.state)) return m.status();
    if (this.#d.metastore.ownerOf(topic, partition) === this.#d.nodeId)
      throw conflict(`this node already owns ${key} (the owner swap happened): the move must finish`);
    m.stopping = true;
    m.wake();
    await m.run;
    if (terminal(m.state)) return m.status();
    await this.#unfreeze(m);
    await discardStaged(this.#d.dataDir, topic, partition);
    m.state = "cancelled";
    m.release?.();
    this.#d.logger.info({ topic, partition, from: m.from }, "partition move cancelled");
    return m.status();
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const m of this.#moves.values()) {
      m.stopping = true;
      m.wake();
    }
    await Promise.allSettled([...this.#moves.values()].map((m) => m.run));
  }

  #launch(move: Move): void {
    this.#moves.set(`${move.topic}/${move.partition}`, move);
    move.release = this.#d.logs.hold(move.topic, move.partition);
    move.run = this.#loop(move).catch((err: unknown) => {
      if (err instanceof Stopped) return;
      this.#d.logger.error({ topic: move.topic, partition: move.partition, err }, "partition move crashed");
      move.error = String(err);
      move.state = "failed";
      if (!this.#owner(move)) move.release?.();
    });
  }

  #source(m: Move): PeerClient {
    const member = this.#d.metastore.members().find((x) => x.id === m.from);
    const address = member === undefined ? undefined : clusterAddressOf(member);
    if (address === undefined)
      throw new NaradError("UNAVAILABLE", `source "${m.from}" has no cluster address`, {
        retryAfterSeconds: 1,
      });
    return this.#d.peers.peer(address);
  }

  #owner(m: Move): boolean {
    return this.#d.metastore.ownerOf(m.topic, m.partition) === this.#d.nodeId;
  }

  #stopCheck(m: Move): void {
    if (m.stopping) throw new Stopped();
  }

  async #loop(m: Move): Promise<void> {
    const dir = stagingDir(this.#d.dataDir, m.topic, m.partition);
    let progress = freshCatchUp;
    for (;;) {
      this.#stopCheck(m);
      if (this.#d.metastore.getTopic(m.topic) === undefined) {
        if (this.#d.metastore.caughtUp?.() === false) {
          await m.sleep(this.#d.timing.retryMs);
          continue;
        }
        await this.#fail(m, "the topic was deleted");
        return;
      }
      try {
        if (m.state === "copying") {
          const manifest = await this.#source(m).moveManifest(m.topic, m.partition);
          m.sourceHwm = manifest.high_watermark;
          const plan = planCopy(manifest.segments, await stagedExtents(dir), this.#d.timing.chunkBytes);
          const step = catchUpStep(progress, plan.remainingBytes, this.#d.timing.catchUp);
          progress = step.progress;
          if (step.action === "copy" && !this.#owner(m)) {
            m.rounds = progress.rounds;
            await this.#copy(m, dir, manifest);
            m.error = undefined;
            continue;
          }
          await this.#finalize(m, dir);
          m.state = "ready";
          m.error = undefined;
          this.#d.logger.info({ ...m.status() }, "partition move ready (source frozen, copy verified)");
          continue;
        }
        // ready: install once we own it, else keep the freeze alive.
        if (this.#owner(m)) {
          await this.#install(m, dir);
          return;
        }
        await m.sleep(this.#d.timing.renewIntervalMs);
        this.#stopCheck(m);
        if (this.#owner(m)) continue;
        await this.#renew(m, dir);
      } catch (err) {
        if (err instanceof Stopped) throw err;
        m.error = err instanceof Error ? err.message : String(err);
        // Fatal: the topic is gone, or the source has no copy / another move holds its freeze.
        const gone =
          err instanceof NaradError &&
          err.code === "NOT_FOUND" &&
          this.#d.metastore.getTopic(m.topic) === undefined;
        if (gone || (err instanceof NaradError && err.code === "CONFLICT" && !this.#owner(m))) {
          await this.#fail(m, m.error);
          return;
        }
        if (m.state === "ready" && m.frozenAt + this.#d.timing.freezeTtlMs <= Date.now()) {
          // The freeze may have lapsed: the source may have taken commits since.
          this.#d.logger.warn(
            { topic: m.topic, partition: m.partition },
            "partition move freeze not renewed in time; copying again",
          );
          m.state = "copying";
          m.frozenAt = 0;
          progress = freshCatchUp;
        }
        await m.sleep(this.#d.timing.retryMs);
      }
    }
  }

  /** One catch-up round: every byte behind the source, in chunks. */
  async #copy(m: Move, dir: string, manifest: PbMoveManifest): Promise<void> {
    const plan = planCopy(manifest.segments, await stagedExtents(dir), this.#d.timing.chunkBytes);
    for (const base of plan.remove) await removeStagedSegment(dir, base);
    for (const base of plan.reset) await resetStagedSegment(dir, base);
    const src = this.#source(m);
    const fetch = (c: Chunk) =>
      src.moveFetch({
        topic: m.topic,
        partition: m.partition,
        base: c.base,
        position: c.position,
        max_bytes: c.length,
      });
    // One chunk in flight while the previous one is written (writes stay in order,
    // so the staged files are always a prefix of the source's).
    let pending: Promise<PbMoveFetchResponse> | undefined;
    try {
      for (let i = 0; i < plan.fetch.length; i++) {
        this.#stopCheck(m);
        const c = plan.fetch[i]!;
        const res = await (pending ?? fetch(c));
        const next = plan.fetch[i + 1];
        pending = next === undefined ? undefined : fetch(next);
        if (!res.found || res.data.length === 0) return; // retention removed it: the next manifest says so
        // A chunk damaged on the way (or in the source's memory) is never written.
        if (chunkChecksum(res.data) !== res.crc32c)
          throw new Error(
            `chunk ${c.base}@${c.position} (${res.data.length} bytes) failed its CRC-32C; fetching again`,
          );
        await writeChunk(dir, c.base, c.position, res.data);
        m.copiedBytes += res.data.length;
        if (res.data.length < c.length) return;
      }
    } finally {
      pending?.catch(() => undefined);
    }
  }

  /** Freeze (or renew) the source, copy what is left, verify: the staged copy then equals the source. */
  async #finalize(m: Move, dir: string, handoff = false): Promise<void> {
    const src = this.#source(m);
    for (let attempt = 0; ; attempt++) {
      this.#stopCheck(m);
      // The source's ttl runs from when it took the request, never before it was sent:
      // counting from the answer would outlive the source's freeze by the answer's latency.
      const sentAt = Date.now();
      const manifest = await src.moveFreeze({
        topic: m.topic,
        partition: m.partition,
        token: m.token,
        ttl_ms: this.#d.timing.freezeTtlMs,
        handoff,
      });
      m.frozenAt = sentAt;
      if (handoff) m.handedOff = true;
      m.sourceHwm = manifest.high_watermark;
      await this.#copy(m, dir, manifest);
      const staged = await stagedExtents(dir);
      if (!copyComplete(manifest.segments, staged)) {
        if (attempt < 3) continue;
        throw new Error("staged copy does not match the frozen source after 3 attempts");
      }
      // Nothing fetched since the last verification at this HWM: the staged copy is already proven.
      if (m.verifiedBytes === m.copiedBytes && m.destHwm === manifest.high_watermark) return;
      try {
        m.verifiedBytes = undefined;
        // The source checksums exactly what we hold; finalizeStaged compares.
        const proof = await src.moveVerify({ topic: m.topic, partition: m.partition, segments: staged });
        const sourceChecksums = proof.segments.map((x) => ({
          base: x.base,
          bytes: x.bytes,
          found: x.found,
          crc32c: x.crc32c,
        }));
        m.destHwm = await finalizeStaged(
          dir,
          {
            highWatermark: manifest.high_watermark,
            frontiers: manifest.frontiers,
            sourceChecksums,
            dedupFloor: manifest.dedup_floor,
          },
          this.#d.log,
        );
        m.verifiedChecksums = sourceChecksums;
        m.verifiedFloor = manifest.dedup_floor;
        m.verifiedBytes = m.copiedBytes;
      } catch (err) {
        // A damaged staged copy: start it over (the freeze holds meanwhile).
        await discardStaged(this.#d.dataDir, m.topic, m.partition);
        await writeMarker(this.#d.dataDir, {
          topic: m.topic,
          partition: m.partition,
          from: m.from,
          token: m.token,
        });
        throw err;
      }
      return;
    }
  }

  /** While ready: keep the source frozen; if its HWM moved (the freeze lapsed), copy again. */
  async #renew(m: Move, dir: string): Promise<void> {
    const sentAt = Date.now();
    const manifest = await this.#source(m).moveFreeze({
      topic: m.topic,
      partition: m.partition,
      token: m.token,
      ttl_ms: this.#d.timing.freezeTtlMs,
    });
    m.frozenAt = sentAt;
    if (manifest.high_watermark !== m.destHwm || !copyComplete(manifest.segments, await stagedExtents(dir))) {
      this.#d.logger.warn(
        { topic: m.topic, partition: m.partition },
        "source changed under the move; copying again",
      );
      m.state = "copying";
    }
  }

  /**
   * This node owns the partition now. If the source answers, freeze/renew
   * and make sure the copy matches (finishing it if not); if it does not,
   * install only while our freeze is known to hold (renewed within the ttl).
   */
  async #install(m: Move, dir: string): Promise<void> {
    try {
      // The handoff: from this answer on the source's freeze never lapses,
      // even while its own metastore view still names it owner (its
      // dispatcher would otherwise commit into the copy given away).
      await this.#finalize(m, dir, true);
    } catch (err) {
      if (m.frozenAt + this.#d.timing.freezeTtlMs <= Date.now()) throw err;
      // An answer, not an unreachable source: it holds no freeze of ours (it lapsed, or
      // another move's): the copy verified before is not known to be complete.
      if (err instanceof NaradError && err.code === "CONFLICT") throw err;
      this.#d.logger.warn(
        { topic: m.topic, partition: m.partition, err },
        "source unreachable at install; the copy matched it within the freeze, installing",
      );
      // Re-verify against the checksums the source gave at the last verification.
      m.destHwm = await finalizeStaged(
        dir,
        {
          highWatermark: m.destHwm,
          frontiers: [],
          sourceChecksums: m.verifiedChecksums,
          // Rewritten, not dropped: finalize replaces the staged floor file.
          dedupFloor: m.verifiedFloor,
        },
        this.#d.log,
      );
    }
    this.#stopCheck(m);
    await this.#d.logs.install(m.topic, m.partition, dir);
    await discardStaged(this.#d.dataDir, m.topic, m.partition);
    this.#d.consumers.dropPartition(m.topic, m.partition);
    this.#d.onInstalled?.(m.topic, m.partition);
    m.state = "done";
    m.error = undefined;
    m.release?.();
    this.#d.logger.info({ ...m.status() }, "partition move done: installed the copy as the live partition");
    // The source's freeze is never ended from here: it is a permanent
    // moved-away hold since the handoff. Ending it could reopen the old copy
    // to commits from nodes (the source's own dispatcher first) whose view
    // still names the source as owner, stranding them in a copy about to be
    // deleted. A source unreachable at install has not heard the handoff:
    // keep telling it, or its freeze lapses ttl after the last renewal.
    if (!m.handedOff) void this.#handOffLater(m);
  }

  async #handOffLater(m: Move): Promise<void> {
    while (!this.#closed && !m.handedOff) {
      await m.sleep(this.#d.timing.retryMs);
      if (this.#closed) return;
      try {
        await this.#source(m).moveFreeze({
          topic: m.topic,
          partition: m.partition,
          token: m.token,
          ttl_ms: this.#d.timing.freezeTtlMs,
          handoff: true,
        });
        m.handedOff = true;
        this.#d.logger.info({ topic: m.topic, partition: m.partition }, "source confirmed the handoff");
      } catch (err) {
        // The source no longer has the partition at all (deleted, or the topic is gone): nothing to freeze.
        if (err instanceof NaradError && (err.code === "CONFLICT" || err.code === "NOT_FOUND")) return;
        this.#d.logger.warn(
          { topic: m.topic, partition: m.partition, err },
          "handoff to the source failed; retrying",
        );
      }
    }
  }

  async #unfreeze(m: Move): Promise<void> {
    try {
      await this.#source(m).moveUnfreeze({ topic: m.topic, partition: m.partition, token: m.token });
    } catch (err) {
      this.#d.logger.warn(
        { topic: m.topic, partition: m.partition, err },
        "could not end the source's freeze (it lapses on its own)",
      );
    }
  }

  async #fail(m: Move, reason: string): Promise<void> {
    m.state = "failed";
    m.error = reason;
    // After the swap the source must stay frozen (see #install).
    if (!this.#owner(m)) await this.#unfreeze(m);
    // Owner already: the staged copy may be the best data there is; keep it (and the hold) for a person.
    if (!this.#owner(m)) {
      await discardStaged(this.#d.dataDir, m.topic, m.partition).catch(() => undefined);
      m.release?.();
    }
    this.#d.logger.error({ ...m.status() }, "partition move failed");
  }
}
