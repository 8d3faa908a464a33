// Queue consumption for every (topic, partition, group) this node owns:
// opens queue state lazily (reading the durable frontier), leases records,
// settles receipt handles, parks long-polls, purges expired leases (one
// coarse timer) and persists moved frontiers in batches (another timer).
//
// Cluster note: every method takes a partition this node owns; a router in
// front (later) sends consume/ack for a remote partition to its owner.

import { randomBytes, randomInt } from "node:crypto";
import { join } from "node:path";
import type { Logger } from "pino";
import { defaultGroup, encodeHandle, parseHandle } from "../core/consumer-handle.ts";
import { ConsumerQueueState, type QueueLimits } from "../core/consumer-state.ts";
import { type SeekTarget, seekOffset } from "../core/group-seek.ts";
import type { StoredRecord } from "../core/records.ts";
import { badRequest, NaradError, unavailable } from "../errors.ts";
import { partitionDirName } from "../log/log-store.ts";
import type { PartitionLog } from "../log/types.ts";
import type { Metastore, TopicConfig } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";
import { listFrontierGroups, readFrontier, removeFrontier, writeFrontier } from "./frontier-file.ts";
import {
  type GroupInfo,
  groupSettings,
  mergeGroups,
  type PartitionGroupState,
  type PartitionGroups,
} from "./group-list.ts";
import { PartitionQueue, type QueueEvents } from "./partition-queue.ts";
import { WaiterSet } from "./waiters.ts";

export interface ConsumerManagerOptions {
  dataDir: string;
  logs: { get(topic: string, partition: number): Promise<PartitionLog> };
  metastore: Pick<Metastore, "getTopic" | "listTopics" | "onChange">;
  nowMs: () => number;
  logger: Logger;
  metrics?: Pick<
    BrokerMetrics,
    "consumerLag" | "consumerInflight" | "consumerAckedAhead" | "consumerRedelivered" | "onConsumerScrape"
  >;
  groupPattern: RegExp;
  persistIntervalMs: number;
  purgeIntervalMs: number;
  maxWaiters: number;
  maxGroupsPerTopic: number;
  maxSkipsPerTake: number;
  readMaxBytes: number;
  /** 12 hex digits; random by default (tests may fix it). */
  newEpoch?: () => string;
}

export interface Delivery {
  partition: number;
  record: StoredRecord;
  receiptHandle: string;
}

export type SettleAction = "ack" | "extend" | "nack";

/** One partition's outcome of a seek: the committed offset before and after. */
export interface SeekResult {
  partition: number;
  previous: number;
  committed: number;
}

interface GroupEntry {
  /** Opened queues (settle looks here only: a live lease is always in memory). */
  open: Map<number, PartitionQueue>;
  opening: Map<number, Promise<PartitionQueue>>;
  /**
   * Seeks in progress, by partition: opening a queue there waits for them,
   * so no queue is opened from the frontier file a seek is replacing.
   */
  seeking: Map<number, Promise<void>>;
  /** Next partition to try first when consume names none. */
  rr: number;
}

interface TopicEntry {
  /**
   * The topic incarnation this state belongs to. The uid, not created_at:
   * a NaradTopic's creationTimestamp has one-second resolution, so a delete
   * and re-create within a second kept the old incarnation's queue state
   * (frontiers, leases) for the new topic.
   */
  uid: string;
  groups: Map<string, GroupEntry>;
}

export const staleHandleMessage =
  "receipt handle is stale: no live lease with that nonce (expired, already settled, or from before a restart)";
/** Narad (Go)'s receipt handle shape: partition:offset:nonce, all decimal. */
const naradGoHandle = /^\d{1,16}:\d{1,16}:\d{1,20}$/;

const limitsOf = (t: TopicConfig, group: string): QueueLimits => {
  const g = groupSettings(t, group);
  return {
    maxInFlight: g.max_in_flight_per_partition,
    maxAckedAhead: g.max_acked_ahead_per_partition,
    visibilityTimeoutMs: g.visibility_timeout_ms,
  };
};

/** 1 .. 2^48-1: never 0, unguessable, and short in base 36 (at most 10 digits). */
const randomNonce = (): number => randomInt(1, 2 ** 48);

export class ConsumerManager {
  readonly #o: ConsumerManagerOptions;
  readonly #topics = new Map<string, TopicEntry>();
  readonly #waiters: WaiterSet;
  readonly #newEpoch: () => string;
  #purgeTimer: ReturnType<typeof setInterval> | undefined;
  #persistTimer: ReturnType<typeof setInterval> | undefined;
  #closing = false;
  /** "topic/partition" frozen by a partition move: no lease taken or settled there. */
  readonly #frozen = new Set<string>();
  /** Opening, once, the queues of groups known only from their frontier files (after a restart). */
  #storedGroupsOpened: Promise<void> | undefined;

  constructor(o: ConsumerManagerOptions) {
    this.#o = o;
    this.#waiters = new WaiterSet(o.maxWaiters);
    this.#newEpoch = o.newEpoch ?? (() => randomBytes(6).toString("hex"));
    o.metastore.onChange(() => this.#dropChangedTopics());
    o.metrics?.onConsumerScrape(async () => {
      this.#storedGroupsOpened ??= this.#openStoredGroups();
      await this.#storedGroupsOpened;
      this.#refreshGauges();
    });
  }

  start(): void {
    this.#purgeTimer = setInterval(() => this.#purgeAll(), this.#o.purgeIntervalMs);
    this.#purgeTimer.unref();
    this.#persistTimer = setInterval(() => this.#persistAll(), this.#o.persistIntervalMs);
    this.#persistTimer.unref();
  }

  validGroup(name: string): boolean {
    return this.#o.groupPattern.test(name) && name !== "." && name !== "..";
  }

  /**
   * One message for `group`, from `partition` or (when undefined) from the
   * topic's partitions round-robin; waits up to waitMs for one to appear.
   * Resolves undefined when none came. `among` (partition undefined only)
   * limits the round-robin to those partitions (cluster mode: the ones this
   * node owns; rpc/queue-access.ts).
   */
  async consume(
    topicIn: TopicConfig,
    group: string,
    partition: number | undefined,
    waitMs: number,
    signal?: AbortSignal,
    among?: readonly number[],
  ): Promise<Delivery | undefined> {
    if (this.#closing) throw unavailable("broker is shutting down");
    let topic = topicIn;
    const deadline = this.#o.nowMs() + waitMs;
    for (let round = 0; ; round++) {
      const version = this.#waiters.version(topic.name);
      const d = await this.#tryOnce(topic, group, partition, among);
      if (d !== undefined) return d;
      const remaining = deadline - this.#o.nowMs();
      if (remaining <= 0 || this.#closing) return undefined;
      if (round === 0 && !this.#waiters.hasRoom())
        throw unavailable("too many consumers are long-polling on this node");
      const outcome = await this.#waiters.wait(topic.name, group, partition, remaining, version, signal);
      if (outcome !== "woken") return undefined;
      const current = this.#o.metastore.getTopic(topic.name);
      if (current === undefined || current.uid !== topic.uid) return undefined;
      topic = current;
    }
  }

  /**
   * Partition moves: stops leasing and settling on topic/partition (503 +
   * Retry-After), then persists every group's frontier there, so the files
   * a move copies are final. Leases in flight are redelivered after the move.
   */
  async freezePartition(topic: string, partition: number): Promise<void> {
    this.#frozen.add(`${topic}/${partition}`);
    // A seek that started before the freeze writes its frontier file first: the move copies it.
    for (const ge of this.#topics.get(topic)?.groups.values() ?? []) await ge.seeking.get(partition);
    const qs = this.#allQueues().filter((q) => q.topic === topic && q.partition === partition);
    for (const q of qs) await q.idle();
    await Promise.all(qs.map((q) => q.flush()));
  }

  unfreezePartition(topic: string, partition: number): void {
    if (this.#frozen.delete(`${topic}/${partition}`)) this.#waiters.wake(topic, partition);
  }

  /** Forgets in-memory queue state of one partition (moved in or out: the files are the truth). */
  dropPartition(topic: string, partition: number): void {
    const entry = this.#topics.get(topic);
    if (entry === undefined) return;
    for (const ge of entry.groups.values()) {
      const q = ge.open.get(partition);
      if (q === undefined) continue;
      q.dropped = true;
      ge.open.delete(partition);
    }
    this.#waiters.wake(topic, partition);
  }

  /** Durable frontier of every group with a frontier file in topic/partition. */
  async frontiers(topic: string, partition: number): Promise<Array<{ group: string; offset: number }>> {
    const dir = this.#partitionDir(topic, partition);
    const out: Array<{ group: string; offset: number }> = [];
    for (const group of (await listFrontierGroups(dir)).sort()) {
      const offset = await readFrontier(dir, group);
      if (offset !== undefined && this.validGroup(group)) out.push({ group, offset });
    }
    return out;
  }

  #assertNotFrozen(topic: string, partition: number): void {
    if (this.#frozen.has(`${topic}/${partition}`))
      throw unavailable(`${topic}/${partition} is frozen for a partition move; retry shortly`);
  }

  /** Acks, extends or nacks the lease a receipt handle names. */
  settle(topic: TopicConfig, rawHandle: string, action: SettleAction): void {
    const parsed = parseHandle(rawHandle, this.#o.groupPattern);
    if (!parsed.ok) {
      // A Narad (Go) handle, partition:offset:nonce, is well formed there and
      // can only be stale here (from another broker or before a migration).
      if (naradGoHandle.test(rawHandle)) throw new NaradError("GONE", staleHandleMessage);
      throw badRequest(parsed.reason);
    }
    const h = parsed.handle;
    this.#assertNotFrozen(topic.name, h.partition);
    if (h.partition >= topic.partitions)
      throw badRequest(`receipt_handle names partition ${h.partition}; the topic has ${topic.partitions}`);
    const entry = this.#topics.get(topic.name);
    const q = entry?.uid === topic.uid ? entry.groups.get(h.group)?.open.get(h.partition) : undefined;
    if (q === undefined || q.epoch !== h.epoch) throw new NaradError("GONE", staleHandleMessage);
    // A lease past its visibility timeout is gone even if the 1 s purge has
    // not run yet: its offset may already be promised to another consumer.
    if (q.state.purge(this.#o.nowMs()) > 0) {
      q.blocked = false;
      this.#waiters.wake(topic.name, h.partition, h.group);
    }
    const limits = limitsOf(topic, h.group);
    if (action === "extend") {
      if (!q.state.extend(h.offset, h.nonce, this.#o.nowMs(), limits))
        throw new NaradError("GONE", staleHandleMessage);
      return;
    }
    if (action === "nack") {
      if (!q.state.nack(h.offset, h.nonce)) throw new NaradError("GONE", staleHandleMessage);
      q.blocked = false;
      this.#waiters.wake(topic.name, h.partition, h.group);
      return;
    }
    const r = q.state.ack(h.offset, h.nonce, limits);
    if (r === "stale") throw new NaradError("GONE", staleHandleMessage);
    if (r === "acked-ahead-full")
      throw unavailable(
        `acked-ahead set of partition ${h.partition} is full (${limits.maxAckedAhead}); ack offset ${q.state.committed} first`,
      );
    if (q.blocked) {
      q.blocked = false;
      this.#waiters.wake(topic.name, h.partition, h.group);
    }
  }

  /** New records are visible on topic/partition (a local commit advanced its HWM). */
  notifyCommitted(topic: string, partition: number): void {
    this.#waiters.wake(topic, partition);
  }

  /** Groups with state (in memory or frontier files) and declared subscriptions. */
  async listGroups(topic: TopicConfig): Promise<GroupInfo[]> {
    const parts: PartitionGroups[] = [];
    for (let p = 0; p < topic.partitions; p++) parts.push(await this.partitionGroups(topic, p));
    return mergeGroups(topic, parts);
  }

  /**
   * The groups with state in one partition this node owns: an open queue (its
   * leases count) or a frontier file. Opens no queue: listing is read-only.
   */
  async partitionGroups(topic: TopicConfig, partition: number): Promise<PartitionGroups> {
    const log = await this.#o.logs.get(topic.name, partition);
    const dir = this.#partitionDir(topic.name, partition);
    const entry = this.#topics.get(topic.name);
    const live = entry?.uid === topic.uid ? entry : undefined;
    const names = new Set((await listFrontierGroups(dir)).filter((g) => this.validGroup(g)));
    for (const [name, ge] of live?.groups ?? [])
      if (ge.open.has(partition) || ge.opening.has(partition) || ge.seeking.has(partition)) names.add(name);
    const groups: PartitionGroupState[] = [];
    for (const name of [...names].sort()) {
      const ge = live?.groups.get(name);
      await ge?.seeking.get(partition);
      await ge?.opening.get(partition)?.catch(() => undefined);
      const q = ge?.open.get(partition);
      if (q !== undefined) {
        const st = q.state.stats();
        groups.push({ name, committed: st.committed, in_flight: st.inFlight, acked_ahead: st.ackedAhead });
        continue;
      }
      const committed = await readFrontier(dir, name);
      if (committed !== undefined) groups.push({ name, committed, in_flight: 0, acked_ahead: 0 });
    }
    return { partition, highWatermark: log.stats().highWatermark, groups };
  }

  /** Forgets a group: in-memory state and frontier files. Resolves whether it existed. */
  async deleteGroup(topic: TopicConfig, group: string): Promise<boolean> {
    const entry = this.#topics.get(topic.name);
    const ge = entry?.groups.get(group);
    let existed = ge !== undefined;
    if (ge !== undefined) {
      entry?.groups.delete(group);
      await Promise.allSettled(ge.opening.values());
      // A seek in flight writes its frontier file: remove the files after it.
      await Promise.allSettled(ge.seeking.values());
      for (const q of ge.open.values()) q.dropped = true;
      for (const q of ge.open.values()) await q.idle();
    }
    for (let p = 0; p < topic.partitions; p++) {
      if (await removeFrontier(this.#partitionDir(topic.name, p), group)) existed = true;
    }
    if (existed) this.#o.logger.info({ topic: topic.name, group }, "consumer group deleted");
    return existed;
  }

  /**
   * Moves the group's committed offset in one partition this node owns
   * (core/group-seek.ts decides the offset). The frontier file is written
   * durably before this resolves. The partition's leases and acked-ahead
   * offsets are dropped with its queue: their receipt handles answer 410,
   * and consumption resumes from the new offset under a new epoch. Seeks of
   * one partition run one at a time; an unknown group is created (a new
   * group may start at latest).
   */
  async seek(topic: TopicConfig, group: string, partition: number, target: SeekTarget): Promise<SeekResult> {
    if (this.#closing) throw unavailable("broker is shutting down");
    this.#assertNotFrozen(topic.name, partition);
    if (partition >= topic.partitions)
      throw badRequest(`partition ${partition} does not exist: the topic has ${topic.partitions}`);
    const ge = this.#group(topic, group);
    const before = ge.seeking.get(partition) ?? Promise.resolve();
    const run = before.then(() => this.#seekNow(topic, ge, group, partition, target));
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    ge.seeking.set(partition, done);
    try {
      return await run;
    } finally {
      if (ge.seeking.get(partition) === done) ge.seeking.delete(partition);
    }
  }

  async #seekNow(
    topic: TopicConfig,
    ge: GroupEntry,
    group: string,
    partition: number,
    target: SeekTarget,
  ): Promise<SeekResult> {
    await ge.opening.get(partition)?.catch(() => undefined);
    const q = ge.open.get(partition);
    const log = q?.log ?? (await this.#o.logs.get(topic.name, partition));
    // Decided before anything is dropped: a refused seek leaves leases as they were.
    const at = seekOffset(target, log.stats());
    if (!at.ok) throw badRequest(`partition ${partition}: ${at.reason}`);
    const dir = this.#partitionDir(topic.name, partition);
    let previous: number;
    if (q !== undefined) {
      q.dropped = true; // its own frontier writes stop here
      await q.idle();
      ge.open.delete(partition);
      previous = q.state.committed;
    } else previous = (await readFrontier(dir, group)) ?? 0;
    await writeFrontier(dir, group, at.offset);
    this.#waiters.wake(topic.name, partition, group);
    this.#o.logger.info(
      { topic: topic.name, group, partition, previous, committed: at.offset },
      "consumer group offset moved",
    );
    return { partition, previous, committed: at.offset };
  }

  /** Stops long-polls (they answer 204) and the timers; new consumes get 503. */
  beginClose(): void {
    this.#closing = true;
    this.#waiters.close();
    clearInterval(this.#purgeTimer);
    clearInterval(this.#persistTimer);
  }

  /** Persists every moved frontier. Call after the HTTP server stopped. */
  async close(): Promise<void> {
    this.beginClose();
    const queues = this.#allQueues();
    for (const q of queues) await q.idle();
    await Promise.all(queues.map((q) => q.flush()));
  }

  async #tryOnce(
    topic: TopicConfig,
    group: string,
    only: number | undefined,
    among?: readonly number[],
  ): Promise<Delivery | undefined> {
    const ge = this.#group(topic, group);
    const n = topic.partitions;
    const start = only ?? ge.rr % n;
    const tries = only === undefined ? n : 1;
    const limits = limitsOf(topic, group);
    const allowed = only === undefined && among !== undefined ? new Set(among) : undefined;
    if (only !== undefined) this.#assertNotFrozen(topic.name, only);
    for (let i = 0; i < tries; i++) {
      const p = (start + i) % n;
      if (allowed !== undefined && !allowed.has(p)) continue;
      if (this.#frozen.has(`${topic.name}/${p}`)) continue;
      const q = await this.#queue(topic, group, p);
      const now = this.#o.nowMs();
      q.state.purge(now);
      const r = await q.take(now, limits);
      if (r.kind !== "leased") continue;
      if (only === undefined) ge.rr = p + 1;
      if (r.redelivery) this.#o.metrics?.consumerRedelivered.inc({ topic: topic.name, group });
      return {
        partition: p,
        record: r.record,
        receiptHandle: encodeHandle({
          group,
          partition: p,
          offset: r.record.offset,
          epoch: q.epoch,
          nonce: r.nonce,
        }),
      };
    }
    return undefined;
  }

  #partitionDir(topic: string, partition: number): string {
    return join(this.#o.dataDir, "topics", topic, partitionDirName(partition));
  }

  #group(topic: TopicConfig, group: string): GroupEntry {
    let entry = this.#topics.get(topic.name);
    if (entry !== undefined && entry.uid !== topic.uid) {
      this.#dropEntry(entry);
      entry = undefined;
    }
    if (entry === undefined) {
      entry = { uid: topic.uid, groups: new Map() };
      this.#topics.set(topic.name, entry);
    }
    let ge = entry.groups.get(group);
    if (ge === undefined) {
      if (entry.groups.size >= this.#o.maxGroupsPerTopic)
        throw badRequest(`topic has ${entry.groups.size} consumer groups (the maximum); delete one first`);
      ge = { open: new Map(), opening: new Map(), seeking: new Map(), rr: 0 };
      entry.groups.set(group, ge);
    }
    return ge;
  }

  #queue(topic: TopicConfig, group: string, partition: number): Promise<PartitionQueue> {
    const ge = this.#group(topic, group);
    const seeking = ge.seeking.get(partition);
    if (seeking !== undefined) return seeking.then(() => this.#queue(topic, group, partition));
    const q = ge.open.get(partition);
    if (q !== undefined) return Promise.resolve(q);
    let opening = ge.opening.get(partition);
    if (opening === undefined) {
      opening = this.#openQueue(topic.name, group, partition).then(
        (queue) => {
          ge.opening.delete(partition);
          ge.open.set(partition, queue);
          // Deleted (group or topic) while opening: usable by this caller, never persisted.
          if (this.#topics.get(topic.name)?.groups.get(group) !== ge) queue.dropped = true;
          return queue;
        },
        (err: unknown) => {
          ge.opening.delete(partition);
          throw err;
        },
      );
      ge.opening.set(partition, opening);
    }
    return opening;
  }

  async #openQueue(topic: string, group: string, partition: number): Promise<PartitionQueue> {
    const log = await this.#o.logs.get(topic, partition);
    const dir = this.#partitionDir(topic, partition);
    const persisted = (await readFrontier(dir, group)) ?? 0;
    const hwm = log.stats().highWatermark;
    if (persisted > hwm)
      this.#o.logger.warn({ topic, partition, group, persisted, hwm }, "consumer frontier is above the HWM");
    const logger = this.#o.logger;
    const events: QueueEvents = {
      corrupt: (count) => logger.warn({ topic, partition, group, count }, "skipped unreadable offsets"),
      expired: (count) =>
        logger.warn({ topic, partition, group, count }, "retention removed offsets before they were acked"),
      persistFailed: (err) =>
        logger.error({ topic, partition, group, err }, "persisting consumer frontier failed"),
    };
    return new PartitionQueue({
      topic,
      partition,
      group,
      dir,
      epoch: this.#newEpoch(),
      // Random nonces (48 bits, fits the handle's 10 base-36 digits): a consumer
      // that holds one handle cannot guess another's (they were sequential).
      state: new ConsumerQueueState(persisted, randomNonce),
      log,
      persisted,
      events,
      maxSkips: this.#o.maxSkipsPerTake,
      readMaxBytes: this.#o.readMaxBytes,
    });
  }

  #allQueues(): PartitionQueue[] {
    const out: PartitionQueue[] = [];
    for (const entry of this.#topics.values())
      for (const ge of entry.groups.values()) for (const q of ge.open.values()) out.push(q);
    return out;
  }

  #purgeAll(): void {
    const now = this.#o.nowMs();
    for (const q of this.#allQueues()) {
      if (q.state.purge(now) > 0) {
        q.blocked = false;
        this.#waiters.wake(q.topic, q.partition, q.group);
      }
    }
  }

  #persistAll(): void {
    for (const q of this.#allQueues()) void q.flush();
  }

  #dropEntry(entry: TopicEntry): void {
    for (const ge of entry.groups.values()) for (const q of ge.open.values()) q.dropped = true;
    entry.groups.clear();
  }

  /** A topic deleted (or deleted and recreated): its queue state is gone with its directory. */
  #dropChangedTopics(): void {
    for (const [name, entry] of [...this.#topics]) {
      const t = this.#o.metastore.getTopic(name);
      if (t !== undefined && t.uid === entry.uid) continue;
      this.#dropEntry(entry);
      this.#topics.delete(name);
      this.#waiters.wakeTopic(name);
    }
  }

  /**
   * The gauges cover open queues; after a restart a group that nobody has
   * consumed from yet exists only as frontier files, and its lag would have
   * no series while the groups API reports it. The first scrape opens those
   * queues (what a groups listing does), so lag shows from the first scrape.
   */
  async #openStoredGroups(): Promise<void> {
    for (const topic of this.#o.metastore.listTopics()) {
      for (let p = 0; p < topic.partitions; p++) {
        if (this.#closing) return;
        const groups = await listFrontierGroups(this.#partitionDir(topic.name, p)).catch(() => []);
        for (const g of groups) {
          if (!this.validGroup(g)) continue;
          await this.#queue(topic, g, p).catch((err: unknown) =>
            this.#o.logger.warn(
              { topic: topic.name, partition: p, group: g, err },
              "opening a stored group failed",
            ),
          );
        }
      }
    }
  }

  #refreshGauges(): void {
    const m = this.#o.metrics;
    if (m === undefined) return;
    m.consumerLag.reset();
    m.consumerInflight.reset();
    m.consumerAckedAhead.reset();
    for (const q of this.#allQueues()) {
      const labels = { topic: q.topic, partition: String(q.partition), group: q.group };
      const st = q.state.stats();
      m.consumerLag.set(labels, Math.max(0, q.log.stats().highWatermark - st.committed));
      m.consumerInflight.set(labels, st.inFlight);
      m.consumerAckedAhead.set(labels, st.ackedAhead + st.corrupt);
    }
  }
}

export { type GroupInfo, type GroupPartitionInfo, type GroupSettings, groupSettings } from "./group-list.ts";
export { defaultGroup };
