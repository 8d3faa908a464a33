// The fan-out engine: one cursor per (parent partition, child) on the node
// that owns the parent partition. A cursor reads committed parent records
// from its saved position, appends them to this node's ingress WAL for the
// child (group-committed, fsynced; the dispatcher then commits them to the
// child partition's owner like any produce, so routing, moves, deletes and
// topic identity apply unchanged), and only then saves its position.
//
// Guarantee: at least once. A crash between the WAL append and the cursor
// save re-copies that batch on restart (duplicates in the child, never a gap).
// A reconciler diffs the cursors the metastore asks for against the running
// ones every second and on every metastore change.

import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";
import type { StoredRecord, WalRecordInput } from "../core/records.ts";
import { SerialByKey } from "../http/serial-by-key.ts";
import { LogError } from "../log/log-errors.ts";
import type { PartitionLog } from "../log/types.ts";
import type { Metastore, TopicConfig } from "../meta/types.ts";
import {
  type BatchLimits,
  batchFull,
  childPartition,
  defaultBatchLimits,
  dueCut,
  dueLagSeconds,
  dueSleepMs,
  firstCommittedSince,
  recordBytes,
  resumeDecision,
} from "./batch.ts";
import { readCursorFile, removeCursor, writeCursor } from "./cursor-file.ts";
import { DeclaredLinks } from "./declared-links.ts";

export { newAttachEpoch } from "./epoch.ts";

export interface FanoutEngineOptions {
  nodeId: string;
  metastore: Metastore;
  logs: {
    get(topic: string, partition: number): Promise<PartitionLog>;
    partitionDir(topic: string, partition: number): string;
    exists(topic: string, partition: number): Promise<boolean>;
  };
  wal: {
    append(records: readonly WalRecordInput[]): Promise<unknown>;
    stats(): { pendingRecords: number; poisoned: boolean };
  };
  registry: Registry;
  logger: Logger;
  nowMs?: () => number;
  limits?: BatchLimits;
  /** Reconcile period (ms). */
  reconcileMs?: number;
  /** Idle wait when the parent has nothing new (a commit notification ends it early). */
  idleWaitMs?: number;
  /** Backoff after a failed read, append or save. */
  retryMs?: number;
  /** The WAL backlog above which cursors wait (the dispatcher catches up first). */
  maxWalPending?: number;
}

interface Link {
  parent: TopicConfig;
  partition: number;
  child: TopicConfig;
  epoch: string;
  delayMs: number;
  attachedAtMs: number;
}

/** What GET /v1/topics/{p}/children shows of one child: lag summed over this node's cursors. */
export interface ChildLag {
  lagMessages: number;
  /** False while a parent partition's cursor runs elsewhere or has not started. */
  complete: boolean;
}

const keyOf = (l: Pick<Link, "parent" | "partition" | "child" | "epoch">): string =>
  `${l.parent.name}\u0000${l.parent.uid}\u0000${l.partition}\u0000${l.child.name}\u0000${l.child.uid}\u0000${l.epoch}`;

class Cursor {
  stopped = false;
  nextOffset: number | undefined;
  hwm = 0;
  /** The parent partition has no directory yet (nothing committed): lag 0, and known. */
  empty = false;
  done: Promise<void> = Promise.resolve();
  #wake: (() => void) | undefined;

  readonly link: Link;

  constructor(link: Link) {
    this.link = link;
  }

  wake(): void {
    this.#wake?.();
  }

  sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    });
  }
}

export class FanoutEngine {
  readonly #o: Required<Omit<FanoutEngineOptions, "limits">> & { limits: BatchLimits };
  readonly #cursors = new Map<string, Cursor>();
  /**
   * One operation at a time per cursor file (partition dir + child name): a
   * stopped cursor's file removal and a newer cursor's writes for a namesake
   * child or a re-attach share the file's name.
   */
  readonly #files = new SerialByKey();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #dropped: Counter<"parent" | "child">;
  readonly #lag: Gauge<"parent" | "partition" | "child">;
  readonly #dueLag: Gauge<"parent" | "partition" | "child">;
  /** Links declared outside the API (kubernetes spec.parent): admitted or refused on the deciding node. */
  readonly #declared: DeclaredLinks;

  constructor(opts: FanoutEngineOptions) {
    this.#o = {
      nowMs: Date.now,
      limits: defaultBatchLimits,
      reconcileMs: 1000,
      idleWaitMs: 1000,
      retryMs: 1000,
      maxWalPending: 100_000,
      ...opts,
    };
    this.#dropped = new Counter({
      name: "narad_fanout_child_dropped_messages",
      help: "Parent records that aged out of the parent's retention before the fan-out cursor copied them (lost for the child)",
      labelNames: ["parent", "child"],
      registers: [opts.registry],
    });
    this.#lag = new Gauge({
      name: "narad_fanout_lag_messages",
      help: "Parent partition high watermark minus the fan-out cursor's next offset",
      labelNames: ["parent", "partition", "child"],
      registers: [opts.registry],
    });
    this.#declared = new DeclaredLinks({
      nodeId: opts.nodeId,
      metastore: opts.metastore,
      logger: opts.logger,
      nowMs: this.#o.nowMs,
    });
    this.#dueLag = new Gauge({
      name: "narad_fanout_due_lag_seconds",
      help: "How far past due the oldest record not yet copied is (delay children: past commit + delay)",
      labelNames: ["parent", "partition", "child"],
      registers: [opts.registry],
    });
  }

  start(): void {
    this.reconcile();
    this.#timer = setInterval(() => this.reconcile(), this.#o.reconcileMs);
    this.#timer.unref();
    this.#o.metastore.onChange(() => this.reconcile());
  }

  /** A commit to topic/partition: wakes the cursors tailing it. */
  notifyCommitted(topic: string, partition: number): void {
    for (const c of this.#cursors.values())
      if (c.link.parent.name === topic && c.link.partition === partition) c.wake();
  }

  /** The cursors the metastore asks of this node: every link × parent partition it owns. */
  #desired(): Map<string, Link> {
    const ms = this.#o.metastore;
    const out = new Map<string, Link>();
    const topics = ms.listTopics();
    const byName = new Map(topics.map((t) => [t.name, t]));
    for (const child of topics) {
      if (child.parent === undefined || child.attach_epoch === undefined) continue;
      const parent = byName.get(child.parent);
      if (parent === undefined) continue;
      for (let p = 0; p < parent.partitions; p++) {
        if (ms.ownerOf(parent.name, p) !== this.#o.nodeId) continue;
        const link: Link = {
          parent,
          partition: p,
          child,
          epoch: child.attach_epoch,
          delayMs: child.fanout_delay_ms ?? 0,
          attachedAtMs: child.attached_at_ms ?? 0,
        };
        out.set(keyOf(link), link);
      }
    }
    return out;
  }

  /** Still asked for: the same parent and child incarnations, the same epoch, owned here. */
  #current(l: Link): boolean {
    if (this.#closed) return false;
    const ms = this.#o.metastore;
    const child = ms.getTopic(l.child.name);
    const parent = ms.getTopic(l.parent.name);
    return (
      child !== undefined &&
      parent !== undefined &&
      child.uid === l.child.uid &&
      parent.uid === l.parent.uid &&
      child.parent === parent.name &&
      child.attach_epoch === l.epoch &&
      l.partition < parent.partitions &&
      ms.ownerOf(parent.name, l.partition) === this.#o.nodeId
    );
  }

  reconcile(): void {
    if (this.#closed) return;
    this.#declared.poke();
    const desired = this.#desired();
    for (const [key, c] of this.#cursors) {
      if (desired.has(key)) continue;
      this.#stop(key, c);
    }
    for (const [key, link] of desired) {
      if (this.#cursors.has(key)) continue;
      const c = new Cursor(link);
      this.#cursors.set(key, c);
      c.done = this.#run(c).catch((err: unknown) =>
        this.#o.logger.error({ err, ...this.#fields(link) }, "fan-out cursor failed"),
      );
    }
  }

  #stop(key: string, c: Cursor): void {
    c.stopped = true;
    c.wake();
    this.#cursors.delete(key);
    const labels = this.#labels(c.link);
    this.#lag.remove(labels);
    this.#dueLag.remove(labels);
    // A detached (or deleted) child's file is of no further use; an ownership
    // change keeps it (the partition may come back here with this epoch).
    void c.done.then(async () => {
      const child = this.#o.metastore.getTopic(c.link.child.name);
      const linked = child?.uid === c.link.child.uid && child.attach_epoch === c.link.epoch;
      if (linked) return;
      const dir = this.#o.logs.partitionDir(c.link.parent.name, c.link.partition);
      await this.#files
        .run(`${dir}\u0000${c.link.child.name}`, () => removeCursor(dir, c.link.child.name, c.link.epoch))
        .catch(() => {});
    });
  }

  #fileKey(l: Link): string {
    return `${this.#o.logs.partitionDir(l.parent.name, l.partition)}\u0000${l.child.name}`;
  }

  #save(l: Link, nextOffset: number): Promise<void> {
    const dir = this.#o.logs.partitionDir(l.parent.name, l.partition);
    return this.#files.run(this.#fileKey(l), () =>
      writeCursor(dir, l.child.name, { epoch: l.epoch, nextOffset }),
    );
  }

  #fields(l: Link) {
    return { parent: l.parent.name, partition: l.partition, child: l.child.name, epoch: l.epoch };
  }

  #labels(l: Link) {
    return { parent: l.parent.name, partition: String(l.partition), child: l.child.name };
  }

  /** Local lag of each child of `parent` (GET /v1/topics/{parent}/children). */
  lag(parent: string, child: string): ChildLag {
    const t = this.#o.metastore.getTopic(parent);
    if (t === undefined) return { lagMessages: 0, complete: false };
    let lag = 0;
    let reporting = 0;
    for (const c of this.#cursors.values()) {
      if (c.link.parent.name !== parent || c.link.child.name !== child) continue;
      // A partition with nothing committed has lag 0 and a known start (the
      // first record committed since the attach): it reports, as in Narad,
      // where a cursor anchors at an empty partition's tail at once.
      if (c.empty) {
        reporting++;
        continue;
      }
      if (c.nextOffset === undefined) continue;
      lag += Math.max(0, c.hwm - c.nextOffset);
      reporting++;
    }
    return { lagMessages: lag, complete: reporting === t.partitions };
  }

  async #start(c: Cursor, log: PartitionLog): Promise<number> {
    const l = c.link;
    const dir = this.#o.logs.partitionDir(l.parent.name, l.partition);
    const st = log.stats();
    const saved = await this.#files.run(this.#fileKey(l), () => readCursorFile(dir, l.child.name));
    const decision = resumeDecision(saved, l.epoch, st.highWatermark);
    if ("resume" in decision) return decision.resume;
    // No usable position of this attachment here: start at the first record
    // committed since the attach. For a fresh attach that is the tail; after a
    // move, a lost or damaged file, it re-copies what may have been copied
    // (duplicates, never a gap). A damaged file is said loudly.
    if (decision.rederive === "malformed" || decision.rederive === "beyond-high-watermark")
      this.#o.logger.warn(
        {
          ...this.#fields(l),
          reason: decision.rederive,
          highWatermark: st.highWatermark,
          ...(saved.state === "ok" ? { savedNextOffset: saved.position.nextOffset } : {}),
        },
        "fan-out cursor file unusable: re-copying from the attach time (the child may receive duplicates)",
      );
    const start = await firstCommittedSince(
      st.oldestOffset,
      st.highWatermark,
      l.attachedAtMs,
      async (off) => {
        try {
          return (await log.read(off, 1, Number.MAX_SAFE_INTEGER))[0]?.commitMs;
        } catch (err) {
          if (err instanceof LogError && err.code === "OFFSET_EXPIRED") return undefined;
          throw err;
        }
      },
    );
    await this.#save(l, start);
    this.#o.logger.info(
      { ...this.#fields(l), nextOffset: start, reason: decision.rederive },
      "fan-out cursor anchored",
    );
    return start;
  }

  /**
   * One batch from `from`: full (records or bytes), or what arrived within
   * the linger, cut at the first undue record. `next` skips anything retention
   * removed below the read (counted as dropped).
   */
  async #read(
    c: Cursor,
    log: PartitionLog,
    from: number,
  ): Promise<{ records: StoredRecord[]; next: number; dropped: number; blockedUntilMs?: number }> {
    const lim = this.#o.limits;
    let next = from;
    let dropped = 0;
    const records: StoredRecord[] = [];
    let bytes = 0;
    let lingered = false;
    for (;;) {
      let got: StoredRecord[];
      try {
        got = await log.read(next, lim.maxRecords - records.length, Math.max(1, lim.maxBytes - bytes));
      } catch (err) {
        if (!(err instanceof LogError && err.code === "OFFSET_EXPIRED")) throw err;
        const oldest = log.stats().oldestOffset;
        if (oldest <= next) throw err;
        dropped += oldest - next;
        next = oldest;
        continue;
      }
      const cut = dueCut(got, this.#o.nowMs(), c.link.delayMs);
      for (const r of got.slice(0, cut.count)) {
        records.push(r);
        bytes += recordBytes(r);
      }
      next += cut.count;
      c.hwm = log.stats().highWatermark;
      if (cut.blockedUntilMs !== undefined)
        return { records, next, dropped, blockedUntilMs: cut.blockedUntilMs };
      if (got.length === 0 || batchFull(records.length, bytes, lim) || lingered || records.length === 0)
        return { records, next, dropped };
      // A partial batch: wait briefly for more so a busy parent ships fat batches.
      lingered = true;
      await new Promise((r) => setTimeout(r, lim.lingerMs));
    }
  }

  async #run(c: Cursor): Promise<void> {
    const l = c.link;
    const labels = this.#labels(l);
    while (!c.stopped && this.#current(l)) {
      try {
        // Never creates the parent partition's directory: nothing was committed
        // there yet (the first commit creates it and wakes this cursor), or a
        // stale ownership view points here after the partition moved away.
        c.empty = !(await this.#o.logs.exists(l.parent.name, l.partition));
        if (c.empty) {
          await c.sleep(this.#o.idleWaitMs);
          continue;
        }
        const log = await this.#o.logs.get(l.parent.name, l.partition);
        c.nextOffset ??= await this.#start(c, log);
        const from = c.nextOffset;
        const batch = await this.#read(c, log, from);
        if (batch.dropped > 0) {
          this.#dropped.inc({ parent: l.parent.name, child: l.child.name }, batch.dropped);
          this.#o.logger.warn(
            { ...this.#fields(l), dropped: batch.dropped },
            "fan-out cursor fell behind the parent's retention: records lost for the child",
          );
        }
        const now = this.#o.nowMs();
        this.#lag.set(labels, Math.max(0, c.hwm - from));
        this.#dueLag.set(labels, dueLagSeconds(batch.records[0]?.commitMs, l.delayMs, now));
        if (batch.records.length > 0) {
          await this.#waitForWal(c);
          // Re-checked right before the write: a child deleted or detached
          // meanwhile gets nothing more (records already in the WAL carry the
          // child's uid, so a namesake created later never receives them).
          if (c.stopped || !this.#current(l)) break;
          // The child as it is now (the same incarnation, #current checked):
          // a PATCH may have grown its partitions since this cursor started,
          // and a produce would use the new count.
          const child = this.#o.metastore.getTopic(l.child.name) ?? l.child;
          await this.#o.wal.append(
            batch.records.map((r) => ({
              topic: child.name,
              key: r.key,
              partition: childPartition(r.key, child.partitions),
              createdMs: r.createdMs,
              payload: r.payload,
              ...(child.uid === "" ? {} : { topicUid: child.uid }),
            })),
          );
        }
        if (batch.next !== from) {
          // Only after the child's records are durable in the WAL: a crash
          // before this line re-copies the batch (duplicates, never a gap).
          await this.#save(l, batch.next);
          c.nextOffset = batch.next;
          this.#lag.set(labels, Math.max(0, c.hwm - batch.next));
        }
        if (batch.blockedUntilMs !== undefined) await c.sleep(dueSleepMs(batch.blockedUntilMs, now));
        else if (batch.records.length === 0) await c.sleep(this.#o.idleWaitMs);
      } catch (err) {
        // The parent deleted (or its directory removed): the reconciler stops this cursor.
        if (err instanceof LogError && (err.code === "TOPIC_DELETED" || err.code === "LOG_CLOSED")) {
          await c.sleep(this.#o.retryMs);
          continue;
        }
        this.#o.logger.warn({ err, ...this.#fields(l) }, "fan-out cursor step failed; retrying");
        await c.sleep(this.#o.retryMs);
      }
    }
  }

  async #waitForWal(c: Cursor): Promise<void> {
    while (!c.stopped && this.#o.wal.stats().pendingRecords > this.#o.maxWalPending) await c.sleep(100);
  }

  /** Stops every cursor and waits for the loops (a step in flight finishes its write first). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const running = [...this.#cursors.values()];
    for (const c of running) {
      c.stopped = true;
      c.wake();
    }
    this.#cursors.clear();
    await Promise.all(running.map((c) => c.done));
  }
}
