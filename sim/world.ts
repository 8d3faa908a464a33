// The simulated cluster: nodes, the metastore, the network, the operator,
// one clock, one PRNG. step() advances the clock, fires due timers, then
// performs ONE action chosen by the PRNG (produce, a dispatcher pass, a
// message delivery, a view update, an operator reconcile, a move turn, or a
// fault) and checks the per-step invariants. Same seed, same run.

import { type Destination, skipHas } from "../broker/src/core/dispatch-plan.ts";
import { partitionForKey } from "../broker/src/core/partitioner.ts";
import type { CommitRecord } from "../broker/src/core/records.ts";
import { destinationOf } from "../broker/src/core/routing.ts";
import {
  batchTopicUid,
  TopicIdentityError,
  topicIdentityProblem,
} from "../broker/src/core/topic-identity.ts";
import { badRequest, notFound } from "../broker/src/errors.ts";
import { NotOwnerError } from "../broker/src/rpc/status.ts";
import { type Prng, prng } from "../broker/src/testing/prng.ts";
import type { SimConfig } from "./config.ts";
import { type CommitAnswer, type DispatchEnv, SimDispatcher } from "./dispatcher.ts";
import { FaultCounts as Counts, type FaultCounts, type FaultKind } from "./faults.ts";
import { Ghosts } from "./ghosts.ts";
import {
  checkCommitted,
  checkDiscarded,
  checkDuplicates,
  checkExactlyOnce,
  checkHwm,
  readableCopies,
  type Violation,
} from "./invariants.ts";
import { liveTopic, Metastore, type Snapshot } from "./model/metastore.ts";
import { Network } from "./model/network.ts";
import { newDisk, partitionKey, type SimNode } from "./model/node.ts";
import { SimLogError } from "./model/partition-log.ts";
import { type MoveContext, MoveRpcError } from "./moves/context.ts";
import { destDue, destRecover, destStep } from "./moves/destination.ts";
import { openLog, sourceResume, sourceTick, sourceViewChanged } from "./moves/source.ts";
import { OperatorModel } from "./operator.ts";
import { callerErrorFor, neverConnectedError } from "./rpc-errors.ts";

const topicPool = ["orders", "events", "audit"];

export class World {
  readonly cfg: SimConfig;
  readonly rng: Prng;
  readonly meta: Metastore;
  readonly nodes: SimNode[] = [];
  readonly net = new Network();
  readonly ghosts = new Ghosts();
  readonly faults: FaultCounts = new Counts();
  readonly op = new OperatorModel();
  readonly violations: Violation[] = [];
  readonly trace: string[] = [];
  readonly diedAt = new Map<string, number>();
  readonly moveCtx: MoveContext;
  now = 0;
  stepNo = 0;
  faultsOn = true;
  #restartAt = new Map<string, number>();
  #pinnedUntil = new Map<string, number>();
  #lastDisturbance = new Map<string, number>();
  #stall = new Map<string, { seq: number; steps: number }>();
  #freshNames = 0;
  readonly stats = { produced: 0, acked: 0, passes: 0, commitsRpc: 0, actions: new Map<string, number>() };

  constructor(cfg: SimConfig) {
    this.cfg = cfg;
    this.rng = prng(cfg.seed);
    this.ghosts.excuseSkipForgotten = !cfg.flags.skipSetCrash;
    this.ghosts.excusePrunedDoubt = !cfg.flags.inDoubtPrune;
    for (let i = 0; i < cfg.brokers; i++) {
      const id = `narad-${i}`;
      const inc = (0x1000_0000_0000_0000n + BigInt(cfg.seed) * 16n + BigInt(i)).toString(16).slice(-16);
      this.nodes.push({
        id,
        ordinal: i,
        alive: true,
        retired: false,
        processEpoch: 0,
        disk: newDisk(inc),
        mem: undefined,
      });
    }
    this.meta = new Metastore([]);
    this.moveCtx = this.#makeMoveCtx();
    this.op.reconcileMembers(this);
    for (const n of this.nodes) this.#start(n);
    this.#createTopic("orders", 3);
    this.#createTopic("events", 2);
    for (const n of this.nodes) this.#advanceView(n, this.meta.latest.version);
  }

  // ------------------------------------------------------------------ helpers

  node(id: string): SimNode | undefined {
    return this.nodes.find((n) => n.id === id);
  }

  view(n: SimNode): Snapshot {
    return this.meta.at(n.mem?.viewVersion ?? this.meta.latest.version);
  }

  log(msg: string): void {
    this.trace.push(`[${this.stepNo} t=${this.now}] ${msg}`);
    if (this.trace.length > 4 * this.cfg.traceTail)
      this.trace.splice(0, this.trace.length - 2 * this.cfg.traceTail);
  }

  #fault(kind: FaultKind): void {
    this.faults.add(kind);
    this.log(`FAULT ${kind}`);
  }

  #violate(vs: Violation[]): void {
    for (const v of vs) {
      this.violations.push(v);
      this.log(`VIOLATION ${v.kind}: ${v.message}`);
    }
  }

  #disturb(...ids: string[]): void {
    for (const id of ids) this.#lastDisturbance.set(id, this.stepNo);
  }

  /** A named crash point: when it fires, the node dies right here and restarts soon. */
  crashAt(n: SimNode, point: string): boolean {
    if (!this.faultsOn || !n.alive || !this.#crashAllowed(n) || !this.rng.bool(0.015)) return false;
    this.#fault(`crash@${point}` as FaultKind);
    this.crashNode(n, this.rng.range(50, 400), `crash point ${point}`);
    return true;
  }

  crashNode(n: SimNode, restartAfterMs: number, why: string): void {
    if (!n.alive || !this.#crashAllowed(n)) return;
    this.log(`${n.id} CRASH (${why}); restart in ${restartAfterMs}ms`);
    if (n.mem !== undefined) {
      for (const s of n.mem.dispatcher.unansweredSeqs()) {
        const id = n.disk.wal.get(s)?.payload.toString();
        if (id !== undefined) this.ghosts.forgottenDoubt.add(id);
      }
      for (const s of n.mem.dispatcher.doneAboveCheckpoint()) {
        const id = n.disk.wal.get(s)?.payload.toString();
        if (id !== undefined) this.ghosts.skipForgotten.add(id);
      }
      n.mem.dispatcher.dead = true;
    }
    n.alive = false;
    n.mem = undefined;
    this.diedAt.set(n.id, this.now);
    this.#restartAt.set(n.id, this.now + restartAfterMs);
    this.#disturb(n.id);
  }

  /**
   * Flag sourceRestartAfterSwap off: the source of a swapped, not yet
   * installed move is not restarted (finding F2: its resume() freeze refuses
   * the destination's token, and the move never finishes).
   */
  #crashAllowed(n: SimNode): boolean {
    const m = this.op.move;
    return this.cfg.flags.sourceRestartAfterSwap || m === undefined || !m.swapped || m.from !== n.id;
  }

  retire(n: SimNode): void {
    this.log(`${n.id} retired (scaled down)`);
    if (n.mem !== undefined) n.mem.dispatcher.dead = true;
    n.alive = false;
    n.retired = true;
    n.mem = undefined;
    this.#restartAt.delete(n.id);
  }

  #start(n: SimNode): void {
    n.processEpoch++;
    n.alive = true;
    for (const l of n.disk.logs.values()) l.frozen = false;
    n.mem = {
      // A restart lists the metastore afresh.
      viewVersion: this.meta.latest.version,
      dispatcher: new SimDispatcher(n.disk.wal, this.#dispatchEnv(n), this.cfg.dispatcher),
      holds: new Set(),
      freezes: new Map(),
      deletions: new Map(),
      moves: new Map(),
    };
    destRecover(this.moveCtx, n);
    sourceResume(this.moveCtx, n);
    this.#disturb(n.id);
  }

  #advanceView(n: SimNode, version: number): void {
    if (n.mem === undefined || version <= n.mem.viewVersion) return;
    n.mem.viewVersion = version;
    sourceViewChanged(this.moveCtx, n);
    for (const m of n.mem.moves.values()) m.nextAtMs = Math.min(m.nextAtMs, this.now);
  }

  #createTopic(name: string, partitions: number): void {
    const active = this.meta.latest.members.filter((m) => m.state === "Active").map((m) => m.id);
    // The operator assigns every partition at creation; with no Active member it waits (the sim skips).
    if (active.length === 0 && this.stepNo > 0) return;
    const start = this.rng.int(Math.max(1, active.length));
    const owners = Array.from({ length: partitions }, (_, p) => active[(start + p) % active.length] ?? "");
    const t = this.meta.createTopic(this.now, name, partitions, owners);
    this.log(`topic ${name} created uid ${t.uid} owners ${owners.join(",")}`);
  }

  // ------------------------------------------------------- the node's I/O side

  #dispatchEnv(n: SimNode): DispatchEnv {
    return {
      localNodeId: n.id,
      now: () => this.now,
      resolve: (topic, p, topicUid): Destination => {
        // dispatch/cluster-destinations.ts resolve, over this node's replica:
        // a record of another incarnation than the live namesake's is topic-missing.
        const v = this.view(n);
        const t = liveTopic(v, topic);
        if (t === undefined || p >= t.partitions) return { kind: "topic-missing" };
        if (topicUid !== undefined && topicUid !== String(t.uid)) return { kind: "topic-missing" };
        const d = destinationOf(n.id, t.owners[p] ?? "", v.members);
        return d.kind === "owner" ? { ...d, topicUid: String(t.uid) } : d;
      },
      partitionCount: (topic) => liveTopic(this.view(n), topic)?.partitions ?? 0,
      commitLocal: (topic, p, records) => this.#commitInto(n, topic, p, records, "local"),
      sendCommit: (to, topic, p, records, deadlineMs, answer) =>
        this.#sendCommit(n, to, topic, p, records, deadlineMs, answer),
      confirmTopicDeleted: (topic, uid) => {
        if (this.faultsOn && this.rng.bool(0.1)) {
          this.#fault("api-unavailable");
          throw new Error("API server unreachable");
        }
        // Replica absent, then a quorum read: objects being deleted count as gone (kube-metastore.ts).
        // With a uid, what must be gone is that incarnation: a namesake with another uid keeps nothing alive.
        const alive = (t: { uid: number } | undefined) =>
          t !== undefined && (uid === undefined || String(t.uid) === uid);
        return !alive(liveTopic(this.view(n), topic)) && !alive(liveTopic(this.meta.latest, topic));
      },
      crashAt: (point) => this.crashAt(n, point),
      trace: (msg) => this.log(msg),
      discarded: (ids) => {
        for (const id of ids) {
          const g = this.ghosts.get(id);
          if (g === undefined) continue;
          g.discarded = true;
          this.#violate(checkDiscarded(g, this.meta.latest));
        }
      },
      prunedDoubts: (ids) => {
        for (const id of ids) this.ghosts.prunedDoubt.add(id);
      },
      expiredDoubts: (ids) => {
        for (const id of ids) this.ghosts.mayBeTwice.add(id);
        this.log(`in-doubt hold expired for ${ids.length} records (may be stored twice)`);
      },
    };
  }

  /** The owner's commitDurable path: the log store (held while a move is in), then the log. */
  #commitInto(
    n: SimNode,
    topic: string,
    p: number,
    records: readonly CommitRecord[],
    how: string,
  ): CommitAnswer {
    const key = partitionKey(topic, p);
    if (n.mem?.holds.has(key) === true) throw new SimLogError("PARTITION_MOVING", `${key} is being moved in`);
    // core/topic-identity.ts: the owner appends only when its view is the commit's incarnation.
    const batch = batchTopicUid(records);
    if (!batch.ok) throw new TopicIdentityError(batch.problem);
    const live = liveTopic(this.view(n), topic);
    const problem = topicIdentityProblem(topic, live && { uid: String(live.uid) }, batch.uid);
    if (problem !== undefined) throw new TopicIdentityError(problem);
    const log = openLog(this.moveCtx, n, topic, p);
    const res = log.commit(records);
    if (res.appended > 0)
      this.log(
        `${n.id} ${how} commit ${key} +${res.appended} dup ${res.duplicates} (hwm ${log.highWatermark}) ${res.ids.join(",")}`,
      );
    this.#violate(checkCommitted(this.ghosts, log, res.ids, `${n.id}:${key}`));
    return res;
  }

  #sendCommit(
    from: SimNode,
    toId: string,
    topic: string,
    p: number,
    records: readonly CommitRecord[],
    deadlineMs: number,
    answer: (r: CommitAnswer | { error: Error }) => void,
  ): void {
    const to = this.node(toId);
    this.stats.commitsRpc++;
    if (to === undefined || !to.alive) {
      answer({ error: neverConnectedError(toId) });
      return;
    }
    if (this.faultsOn && this.rng.bool(0.03)) {
      this.#fault("drop-request");
      this.#disturb(from.id, toId);
      return;
    }
    const t = this.cfg.timing;
    const fromEpoch = from.processEpoch;
    this.net.send({
      label: `commit ${from.id}→${toId} ${topic}/${p} x${records.length}`,
      fromNode: from.id,
      fromEpoch,
      toNode: toId,
      toEpoch: to.processEpoch,
      deliverAtMs: this.now + this.rng.range(t.rpcMinMs, t.rpcMaxMs),
      deliver: () => {
        // rpc/server.ts: a call whose deadline passed before it started is not started.
        if (this.now > deadlineMs) return;
        let result: CommitAnswer | { error: Error };
        try {
          result = this.#serveCommit(to, topic, p, records, from.id);
        } catch (err) {
          result = { error: callerErrorFor(err, toId) };
        }
        if (!to.alive) return;
        if ("appended" in result && this.crashAt(to, "owner-after-commit-before-answer")) return;
        let delay = this.rng.range(t.rpcMinMs, t.rpcMaxMs);
        if (this.faultsOn && this.rng.bool(0.03)) {
          this.#fault("drop-answer");
          this.#disturb(from.id, toId);
          return;
        }
        if (this.faultsOn && this.rng.bool(0.03)) {
          this.#fault("late-answer");
          this.#disturb(from.id, toId);
          delay = deadlineMs - this.now + this.rng.range(1, 200);
        }
        this.net.send({
          label: `answer ${toId}→${from.id} ${topic}/${p}`,
          fromNode: toId,
          fromEpoch: to.processEpoch,
          toNode: from.id,
          toEpoch: fromEpoch,
          deliverAtMs: this.now + delay,
          deliver: () => answer(result),
        });
      },
    });
  }

  /** rpc/server.ts ownedLog + commit: refuse what this node's replica says it does not own. */
  #serveCommit(
    n: SimNode,
    topic: string,
    p: number,
    records: readonly CommitRecord[],
    from: string,
  ): CommitAnswer {
    const v = this.view(n);
    const t = liveTopic(v, topic);
    if (t === undefined) throw notFound(`topic "${topic}" not found`);
    if (p >= t.partitions) throw badRequest(`partition ${p} out of range`);
    const owner = t.owners[p] ?? "";
    if (owner !== n.id)
      throw new NotOwnerError(`node ${n.id} does not own ${topic}/${p} (owner: ${owner || "none"})`);
    return this.#commitInto(n, topic, p, records, `rpc from ${from}`);
  }

  #makeMoveCtx(): MoveContext {
    return {
      now: () => this.now,
      view: (n) => this.view(n),
      node: (id) => this.node(id),
      call: <T>(from: SimNode, to: string, what: string, handler: (peer: SimNode) => T): T => {
        const peer = this.node(to);
        if (peer === undefined || !peer.alive || peer.mem === undefined)
          throw new MoveRpcError("UNAVAILABLE", `${what}: ${to} is down`);
        if (this.faultsOn && this.rng.bool(0.03)) {
          this.#fault("drop-request");
          throw new MoveRpcError("UNAVAILABLE", `${what} to ${to} lost`);
        }
        const r = handler(peer);
        if (this.faultsOn && this.rng.bool(0.03)) {
          this.#fault("drop-answer");
          throw new MoveRpcError("UNAVAILABLE", `${what} answer from ${to} lost`);
        }
        void from;
        return r;
      },
      authoritativeOwner: (_n, topic, partition) => {
        if (this.faultsOn && this.rng.bool(0.1)) {
          this.#fault("api-unavailable");
          throw new Error("API server unreachable");
        }
        const t = liveTopic(this.meta.latest, topic);
        return t === undefined ? "gone" : (t.owners[partition] ?? "");
      },
      trace: (msg) => this.log(msg),
      crashAt: (n, point) => this.crashAt(n, point),
      timing: this.cfg.timing,
    };
  }

  // -------------------------------------------------------------- the actions

  #produce(): void {
    const up = this.nodes.filter((x) => x.alive && x.mem !== undefined);
    if (up.length === 0) return;
    const n = this.rng.pick(up);
    const v = this.view(n);
    const self = v.members.find((m) => m.id === n.id);
    if (self?.state === "Decommissioning" || self?.state === "Removed") return; // 503: clients go elsewhere
    const live = [...v.topics.values()].filter((t) => !t.deleting);
    if (live.length === 0) return;
    const t = this.rng.pick(live);
    const key = Buffer.from(`k${this.rng.int(24)}`);
    const g = this.ghosts.create(t.name, t.uid, n.id);
    this.stats.produced++;
    n.disk.wal.append([
      {
        topic: t.name,
        // Records carry the incarnation the ingress accepted them for (WAL formats 3/4).
        topicUid: String(t.uid),
        key,
        partition: partitionForKey(key, t.partitions),
        createdMs: this.now,
        payload: Buffer.from(g.id),
      },
    ]);
    n.mem!.dispatcher.onDurable();
    if (this.crashAt(n, "wal-append-before-202")) return;
    g.acked = true;
    this.stats.acked++;
  }

  async #dispatch(n: SimNode): Promise<void> {
    await n.mem!.dispatcher.startPass();
    this.stats.passes++;
  }

  #deliver(): void {
    const due = this.net.due(this.now);
    const m = this.rng.pick(due);
    this.net.take(m);
    const from = this.node(m.fromNode);
    const to = this.node(m.toNode);
    // A restart on either end broke the connection.
    if (from === undefined || to === undefined || !to.alive || to.processEpoch !== m.toEpoch) return;
    if (from.processEpoch !== m.fromEpoch) return;
    m.deliver();
  }

  #viewUpdate(): void {
    const lagging = this.nodes.filter(
      (n) => n.mem !== undefined && n.mem.viewVersion < this.meta.latest.version && !this.#pinned(n),
    );
    if (lagging.length === 0) return;
    const n = this.rng.pick(lagging);
    // A watch delivers events in order; it may have caught up to any version so far.
    this.#advanceView(n, this.rng.range(n.mem!.viewVersion + 1, this.meta.latest.version));
  }

  #pinned(n: SimNode): boolean {
    return (this.#pinnedUntil.get(n.id) ?? 0) > this.now;
  }

  #operator(): void {
    this.op.reconcileMembers(this);
    this.op.reconcileMove(this);
    this.op.reconcileRoll(this);
    this.op.reconcileDecommission(this);
    this.op.reconcileDeletions(this);
  }

  #moveTurn(): void {
    const due: [SimNode, NonNullable<SimNode["mem"]>["moves"] extends Map<string, infer M> ? M : never][] =
      [];
    for (const n of this.nodes) {
      if (n.mem === undefined) continue;
      for (const m of n.mem.moves.values()) if (destDue(this.moveCtx, n, m)) due.push([n, m]);
    }
    if (due.length === 0) return;
    const [n, m] = this.rng.pick(due);
    destStep(this.moveCtx, n, m);
  }

  #injectFault(): void {
    const live = this.nodes.filter((n) => n.alive && !n.retired);
    const flags = this.cfg.flags;
    const choice = this.rng.int(9);
    if (live.length === 0) return;
    switch (choice) {
      case 0: {
        // One down at a time keeps a quorum of the cluster working (the sim does not test total outages).
        if (live.length < this.nodes.filter((n) => !n.retired).length) return;
        const n = this.rng.pick(live);
        if (this.op.roll?.id === n.id || this.op.decommission?.id === n.id) return;
        if (this.rng.bool(0.5)) {
          this.#fault("crash");
          this.crashNode(n, this.rng.range(20, this.cfg.timing.downGraceMs - 100), "fault");
        } else {
          this.#fault("down");
          this.crashNode(
            n,
            this.rng.range(this.cfg.timing.downGraceMs * 2, this.cfg.timing.downGraceMs * 8),
            "fault: down",
          );
        }
        return;
      }
      case 1: {
        if (this.op.roll !== undefined || this.op.decommission !== undefined) return;
        if (live.length < this.nodes.filter((n) => !n.retired).length) return;
        const n = this.rng.pick(live);
        this.#fault("roll-maintenance");
        this.op.roll = { id: n.id, phase: "draining", sinceMs: this.now };
        return;
      }
      case 2: {
        if (this.op.decommissioned || this.op.decommission !== undefined || this.op.roll !== undefined)
          return;
        if (this.nodes.length < 3 || this.op.move !== undefined || !this.rng.bool(0.2)) return;
        const n = this.nodes[this.nodes.length - 1]!;
        if (!n.alive) return;
        this.#fault("decommission-removed");
        this.op.decommission = { id: n.id, phase: "moving" };
        return;
      }
      case 3: {
        const n = this.rng.pick(live);
        const long = flags.longViewLag && this.rng.bool(0.5);
        this.#fault(long ? "long-stale-view" : "stale-view");
        const ms = long
          ? this.rng.range(this.cfg.timing.freezeTtlMs, 3 * this.cfg.timing.freezeTtlMs)
          : this.rng.range(50, this.cfg.timing.viewLagBoundMs);
        this.#pinnedUntil.set(n.id, this.now + ms);
        this.#disturb(n.id);
        return;
      }
      case 4:
      case 5: {
        if (this.op.move !== undefined || this.op.decommission !== undefined) return;
        const topics = [...this.meta.latest.topics.values()].filter((t) => !t.deleting);
        if (topics.length === 0) return;
        const t = this.rng.pick(topics);
        const p = this.rng.int(t.partitions);
        const from = t.owners[p] ?? "";
        if (from === "") return;
        const targets = this.op.members.filter(
          (m) => m.state === "Active" && m.id !== from && this.node(m.id)?.alive,
        );
        if (targets.length === 0) return;
        this.#fault("move");
        this.op.startMove(this, t.name, p, from, this.rng.pick(targets).id);
        return;
      }
      case 6: {
        const topics = [...this.meta.latest.topics.values()].filter((t) => !t.deleting);
        if (topics.length < 2) return;
        const t = this.rng.pick(topics);
        if (this.op.move?.topic === t.name) return;
        this.#fault("topic-delete");
        this.meta.markDeleting(this.now, t.name);
        this.log(`topic ${t.name} uid ${t.uid} marked for deletion`);
        return;
      }
      default: {
        const existing = [...this.meta.latest.topics.values()];
        if (existing.filter((t) => !t.deleting).length >= 3) return;
        const free = topicPool.filter((n) => !this.meta.latest.topics.has(n));
        const everUsed = new Set(
          this.ghosts.all.size > 0 ? [...this.ghosts.all.values()].map((g) => g.topic) : [],
        );
        const reuse = flags.topicRecreate ? free.filter((n) => everUsed.has(n)) : [];
        if (reuse.length > 0 && this.rng.bool(0.7)) {
          this.#fault("topic-recreate");
          this.#createTopic(this.rng.pick(reuse), this.rng.range(2, 4));
        } else {
          this.#fault("topic-create");
          this.#createTopic(`t${++this.#freshNames}`, this.rng.range(2, 4));
        }
      }
    }
  }

  // ------------------------------------------------------------------ a step

  #timers(): void {
    for (const [id, at] of [...this.#restartAt]) {
      if (at > this.now) continue;
      this.#restartAt.delete(id);
      const n = this.node(id)!;
      if (!n.retired) {
        this.#start(n);
        this.log(`${id} restarted`);
      }
    }
    for (const n of this.nodes) {
      if (n.mem === undefined) continue;
      sourceTick(this.moveCtx, n);
      if (n.mem === undefined) continue;
      n.mem.dispatcher.checkTimeouts();
      // Bounded lag: a view older than the bound catches up (unless a stale-view fault pins it).
      const v = n.mem?.viewVersion;
      if (v !== undefined && v < this.meta.latest.version && !this.#pinned(n)) {
        const nextWritten = this.meta.writtenAt[v] ?? 0;
        if (this.now - nextWritten >= this.cfg.timing.viewLagBoundMs)
          this.#advanceView(n, this.meta.latest.version);
      }
    }
  }

  #count(action: string): void {
    this.stats.actions.set(action, (this.stats.actions.get(action) ?? 0) + 1);
  }

  async step(): Promise<void> {
    this.stepNo++;
    this.now += this.rng.int(this.cfg.timing.maxTickMs + 1);
    this.#timers();

    const runnable = this.nodes.filter((n) => n.mem?.dispatcher.runnable());
    const due = this.net.due(this.now).length > 0;
    const options: [string, number][] = [];
    if (this.faultsOn) options.push(["produce", 22]);
    if (runnable.length > 0) options.push(["dispatch", 25]);
    if (due) options.push(["deliver", 30]);
    options.push(["view", 8], ["operator", 8], ["move", 8]);
    if (this.faultsOn) options.push(["fault", 100 * this.cfg.faultRate]);
    const total = options.reduce((s, [, w]) => s + w, 0);
    let r = this.rng.next() * total;
    let action = options[options.length - 1]![0];
    for (const [name, w] of options) {
      if (r < w) {
        action = name;
        break;
      }
      r -= w;
    }
    this.#count(action);
    switch (action) {
      case "produce":
        this.#produce();
        break;
      case "dispatch":
        await this.#dispatch(this.rng.pick(runnable));
        break;
      case "deliver":
        this.#deliver();
        break;
      case "view":
        this.#viewUpdate();
        break;
      case "operator":
        this.#operator();
        break;
      case "move":
        this.#moveTurn();
        break;
      default:
        this.#injectFault();
    }
    this.#checkStep();
  }

  // ------------------------------------------------------------- invariants

  #checkStep(): void {
    this.#violate(checkHwm(this.nodes));
    this.#violate(checkDuplicates(readableCopies(this.meta.latest, this.nodes), this.ghosts));
    this.#checkStalls();
  }

  /**
   * A partition is healthy for a dispatcher when the dispatcher's node and the
   * owner are up and undisturbed (no crash, restart, lost message or pinned
   * view lately), both views are current, the owner is Active, and no move or
   * deletion touches it. Then its oldest pending WAL record must move within
   * stallSteps.
   */
  #checkStalls(): void {
    const latest = this.meta.latest;
    const recent = (id: string) => this.stepNo - (this.#lastDisturbance.get(id) ?? -1_000_000) < 150;
    const seen = new Set<string>();
    for (const n of this.nodes) {
      if (n.mem === undefined || recent(n.id) || n.mem.viewVersion !== latest.version) continue;
      const d = n.mem.dispatcher;
      const oldest = new Map<string, number>();
      const wal = n.disk.wal;
      for (let s = d.checkpoint; s < wal.nextSeq; s++) {
        if (skipHas(d.skip, s)) continue;
        const r = wal.get(s)!;
        const k = partitionKey(r.topic, r.partition);
        if (!oldest.has(k)) oldest.set(k, s);
      }
      for (const [k, seq] of oldest) {
        const [topic, p] = [k.slice(0, k.lastIndexOf("/")), Number(k.slice(k.lastIndexOf("/") + 1))];
        const t = liveTopic(latest, topic);
        if (
          t === undefined ||
          latest.topics.get(topic)?.uid !== this.ghosts.get(wal.get(seq)!.payload.toString())?.uid
        )
          continue;
        const ownerId = t.owners[p] ?? "";
        const owner = this.node(ownerId);
        const member = latest.members.find((m) => m.id === ownerId);
        const healthy =
          owner?.mem !== undefined &&
          member?.state === "Active" &&
          !recent(ownerId) &&
          owner.mem.viewVersion === latest.version &&
          this.op.move?.topic !== topic &&
          !owner.mem.holds.has(k) &&
          owner.disk.logs.get(k)?.frozen !== true;
        const sk = `${n.id}|${k}`;
        if (!healthy) continue;
        seen.add(sk);
        const prev = this.#stall.get(sk);
        const steps = prev !== undefined && prev.seq === seq ? prev.steps + 1 : 0;
        this.#stall.set(sk, { seq, steps });
        if (steps === this.cfg.stallSteps)
          this.#violate([
            {
              kind: "stall",
              message: `${n.id}: ${k} (owner ${ownerId} Active and healthy) has not moved past seq ${seq} for ${steps} steps (checkpoint ${d.checkpoint}, WAL next ${wal.nextSeq})`,
            },
          ]);
      }
    }
    for (const k of [...this.#stall.keys()]) if (!seen.has(k)) this.#stall.delete(k);
  }

  /** Stops the faults, brings every node back, lets the system settle; then checks exactly-once. */
  async quiesce(): Promise<void> {
    this.faultsOn = false;
    this.log("QUIESCE: faults off, every node restarts, views catch up");
    this.op.roll = undefined;
    this.#pinnedUntil.clear();
    for (const n of this.nodes) if (!n.alive && !n.retired) this.#restartAt.set(n.id, this.now);
    for (let i = 0; i < this.cfg.quiesceSteps; i++) {
      await this.step();
      if (this.violations.length > 0) return;
      if (this.#settled()) {
        const copies = readableCopies(this.meta.latest, this.nodes);
        this.#violate(checkDuplicates(copies, this.ghosts));
        this.#violate(checkExactlyOnce(copies, this.ghosts, this.meta.latest));
        return;
      }
    }
    const pending = this.nodes
      .filter((n) => !n.retired)
      .map((n) => `${n.id}: ${n.disk.wal.pending} pending (checkpoint ${n.disk.wal.checkpoint})`)
      .join("; ");
    const moves = this.nodes
      .flatMap((n) =>
        [...(n.mem?.moves.values() ?? [])].map(
          (m) => `${n.id} ${m.topic}/${m.partition} ${m.state} ${m.error ?? ""}`,
        ),
      )
      .join("; ");
    this.#violate([
      {
        kind: "not-drained",
        message: `not settled after ${this.cfg.quiesceSteps} quiet steps: ${pending}; operator move ${JSON.stringify(this.op.move)}; moves: ${moves}; deleting: ${[...this.meta.latest.topics.values()].filter((t) => t.deleting).map((t) => t.name)}; in flight ${this.net.inFlight.length}; decommission ${JSON.stringify(this.op.decommission)}`,
      },
    ]);
  }

  #settled(): boolean {
    if (this.op.move !== undefined || this.op.decommission !== undefined) return false;
    if ([...this.meta.latest.topics.values()].some((t) => t.deleting)) return false;
    for (const n of this.nodes) {
      if (n.retired) continue;
      if (!n.alive || n.mem === undefined) return false;
      if (n.disk.wal.pending > 0 || n.mem.dispatcher.inPass) return false;
      if (n.mem.viewVersion !== this.meta.latest.version) return false;
    }
    return this.net.inFlight.length === 0;
  }
}
