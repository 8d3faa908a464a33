// The destination side of a partition move, after broker/src/moves/
// destination.ts: catch-up copy rounds (core/move-plan.ts planCopy and
// catchUpStep decide), freeze the source and copy the rest (finalize) →
// ready; while ready renew the freeze every renewInterval; once this node's
// view names it owner, finalize once more (or, with the source unreachable,
// install if the freeze is known to hold) and install → done. The last
// finalize is the handoff (moveFreeze handoff: true): from then on the
// source's freeze never lapses, whatever its view says; a source unreachable
// at install is told later (#handOffLater), until then its freeze may lapse.

import { catchUpStep, copyComplete, freshCatchUp, planCopy } from "../../broker/src/core/move-plan.ts";
import { liveTopic, ownerOf } from "../model/metastore.ts";
import { partitionKey, type SimNode } from "../model/node.ts";
import { SimPartitionLog } from "../model/partition-log.ts";
import { type MoveContext, MoveRpcError } from "./context.ts";
import { type SourceManifest, sourceForget, sourceFreeze, sourceManifest, sourceUnfreeze } from "./source.ts";
import type { DestMove, MoveState } from "./state.ts";

const chunkBytes = 300;
const catchUpLimits = { closeEnoughBytes: 400, maxRounds: 20, maxStalledRounds: 3 };

function extents(log: SimPartitionLog | undefined): { base: number; bytes: number }[] {
  return log === undefined || log.bytes === 0 ? [] : [{ base: 0, bytes: log.bytes }];
}

function owner(ctx: MoveContext, n: SimNode, m: DestMove): boolean {
  return ownerOf(ctx.view(n), m.topic, m.partition) === n.id;
}

/** PUT /admin/v1/moves/{topic}/{partition}: checks like MoveManager.start, then launches. */
export function destStart(
  ctx: MoveContext,
  n: SimNode,
  topic: string,
  partition: number,
  from: string,
  token: string,
): MoveState {
  const mem = n.mem;
  if (mem === undefined) throw new MoveRpcError("UNAVAILABLE", "down");
  const v = ctx.view(n);
  const t = liveTopic(v, topic);
  if (t === undefined) throw new MoveRpcError("NOT_FOUND", "topic not found");
  if (from === n.id) throw new MoveRpcError("BAD_REQUEST", "from is this node");
  const key = partitionKey(topic, partition);
  const existing = mem.moves.get(key);
  const own = ownerOf(v, topic, partition);
  if (existing !== undefined && existing.state !== "done" && existing.state !== "failed") {
    if (existing.from === from) return existing.state;
    throw new MoveRpcError("CONFLICT", "another move running");
  }
  if (own === n.id) {
    if (existing?.state === "done" && existing.from === from) return "done";
    throw new MoveRpcError("CONFLICT", "already owner");
  }
  if (own !== from) throw new MoveRpcError("CONFLICT", `${from} does not own ${key}`);
  n.disk.markers.set(key, { topic, partition, from, token });
  launch(ctx, n, { topic, partition, from, token });
  return "copying";
}

export function launch(
  ctx: MoveContext,
  n: SimNode,
  mk: { topic: string; partition: number; from: string; token: string },
): void {
  const key = partitionKey(mk.topic, mk.partition);
  n.mem!.moves.set(key, {
    ...mk,
    state: "copying",
    progress: freshCatchUp,
    frozenAtMs: 0,
    destHwm: 0,
    nextAtMs: ctx.now(),
    handedOff: false,
  });
  n.mem!.holds.add(key);
  if (!n.disk.staged.has(key)) n.disk.staged.set(key, emptyStage(ctx, n, mk.topic));
  ctx.trace(`${n.id} move ${key} from ${mk.from} launched`);
}

function emptyStage(ctx: MoveContext, n: SimNode, topic: string): SimPartitionLog {
  // The staged copy takes the source's bytes, hence its incarnation; uid 0 until the first chunk.
  const uid = liveTopic(ctx.view(n), topic)?.uid ?? 0;
  return stageOf(uid);
}

function stageOf(uid: number): SimPartitionLog {
  return new SimPartitionLog(uid);
}

/** At restart (MoveManager.recover): every marker's move resumes in "copying". */
export function destRecover(ctx: MoveContext, n: SimNode): void {
  for (const [key, mk] of n.disk.markers) {
    if (!n.disk.staged.has(key)) n.disk.staged.set(key, emptyStage(ctx, n, mk.topic));
    launch(ctx, n, mk);
  }
  for (const key of [...n.disk.staged.keys()]) if (!n.disk.markers.has(key)) n.disk.staged.delete(key);
}

/** Whether a move has work to do now. */
export function destDue(ctx: MoveContext, _n: SimNode, m: DestMove): boolean {
  const handOffDue = m.state === "done" && !m.handedOff;
  return (m.state === "copying" || m.state === "ready" || handOffDue) && ctx.now() >= m.nextAtMs;
}

/** MoveManager.#handOffLater: one attempt to tell an unreachable-at-install source of the handoff. */
function handOffLater(ctx: MoveContext, n: SimNode, m: DestMove): void {
  try {
    ctx.call(n, m.from, "moveFreeze", (src) =>
      sourceFreeze(ctx, src, m.topic, m.partition, m.token, ctx.timing.freezeTtlMs, true),
    );
    m.handedOff = true;
    ctx.trace(`${n.id} move ${partitionKey(m.topic, m.partition)}: source confirmed the handoff`);
  } catch (err) {
    const e = err instanceof MoveRpcError ? err : undefined;
    if (e?.code === "CONFLICT" || e?.code === "NOT_FOUND") {
      m.handedOff = true; // nothing left to freeze there
      return;
    }
    m.nextAtMs = ctx.now() + ctx.timing.moveRetryMs;
  }
}

/** One turn of MoveManager.#loop. */
export function destStep(ctx: MoveContext, n: SimNode, m: DestMove): void {
  const key = partitionKey(m.topic, m.partition);
  if (m.state === "done") {
    handOffLater(ctx, n, m);
    return;
  }
  const v = ctx.view(n);
  if (liveTopic(v, m.topic) === undefined) {
    fail(ctx, n, m, "the topic was deleted");
    return;
  }
  try {
    if (m.state === "copying") {
      const man = ctx.call(n, m.from, "moveManifest", (src) =>
        sourceManifest(ctx, src, m.topic, m.partition),
      );
      const staged = n.disk.staged.get(key);
      const plan = planCopy(extents(man.log), extents(staged), chunkBytes);
      const step = catchUpStep(m.progress, plan.remainingBytes, catchUpLimits);
      m.progress = step.progress;
      if (step.action === "copy" && !owner(ctx, n, m)) {
        copy(n, key, man);
        if (ctx.crashAt(n, "move-copy")) return;
        m.nextAtMs = ctx.now();
        return;
      }
      finalize(ctx, n, m, key);
      if (n.mem === undefined) return;
      m.state = "ready";
      m.nextAtMs = ctx.now() + ctx.timing.renewIntervalMs;
      ctx.trace(`${n.id} move ${key} ready (destHwm ${m.destHwm})`);
      if (ctx.crashAt(n, "move-finalize")) return;
      return;
    }
    // ready
    if (owner(ctx, n, m)) {
      install(ctx, n, m, key);
      return;
    }
    renew(ctx, n, m, key);
    m.nextAtMs = ctx.now() + ctx.timing.renewIntervalMs;
  } catch (err) {
    const e = err instanceof MoveRpcError ? err : undefined;
    m.error = err instanceof Error ? err.message : String(err);
    const gone = e?.code === "NOT_FOUND" && liveTopic(ctx.view(n), m.topic) === undefined;
    if (gone || (e?.code === "CONFLICT" && !owner(ctx, n, m))) {
      fail(ctx, n, m, m.error);
      return;
    }
    if (m.state === "ready" && m.frozenAtMs + ctx.timing.freezeTtlMs <= ctx.now()) {
      ctx.trace(`${n.id} move ${key}: freeze not renewed in time; copying again`);
      m.state = "copying";
      m.frozenAtMs = 0;
      m.progress = freshCatchUp;
    }
    m.nextAtMs = ctx.now() + ctx.timing.moveRetryMs;
  }
}

function copy(n: SimNode, key: string, man: SourceManifest): void {
  // A round fetches every byte behind the source; verified bytes never change, so a prefix copy is exact.
  n.disk.staged.set(key, man.log.prefix(man.bytes));
}

function finalize(ctx: MoveContext, n: SimNode, m: DestMove, key: string, handoff = false): void {
  for (let attempt = 0; ; attempt++) {
    const man = ctx.call(n, m.from, "moveFreeze", (src) =>
      sourceFreeze(ctx, src, m.topic, m.partition, m.token, ctx.timing.freezeTtlMs, handoff),
    );
    m.frozenAtMs = ctx.now();
    if (handoff) m.handedOff = true;
    if (ctx.crashAt(n, "move-freeze")) throw new MoveRpcError("UNAVAILABLE", "crashed");
    copy(n, key, man);
    const staged = n.disk.staged.get(key);
    if (!copyComplete(extents(man.log), extents(staged))) {
      if (attempt < 3) continue;
      throw new Error("staged copy does not match the frozen source");
    }
    m.destHwm = staged?.highWatermark ?? 0;
    return;
  }
}

function renew(ctx: MoveContext, n: SimNode, m: DestMove, key: string): void {
  const man = ctx.call(n, m.from, "moveFreeze", (src) =>
    sourceFreeze(ctx, src, m.topic, m.partition, m.token, ctx.timing.freezeTtlMs),
  );
  m.frozenAtMs = ctx.now();
  if (man.highWatermark !== m.destHwm || !copyComplete(extents(man.log), extents(n.disk.staged.get(key)))) {
    ctx.trace(`${n.id} move ${key}: source changed under the move; copying again`);
    m.state = "copying";
  }
}

function install(ctx: MoveContext, n: SimNode, m: DestMove, key: string): void {
  try {
    // The handoff: from this answer on the source's freeze never lapses.
    finalize(ctx, n, m, key, true);
  } catch (err) {
    if (n.mem === undefined) return;
    if (m.frozenAtMs + ctx.timing.freezeTtlMs <= ctx.now()) throw err;
    ctx.trace(`${n.id} move ${key}: source unreachable at install; freeze known to hold, installing`);
  }
  if (n.mem === undefined) return;
  if (ctx.crashAt(n, "move-install")) return;
  const staged = n.disk.staged.get(key)!;
  n.disk.logs.set(key, staged);
  // The directory is replaced (moved-away mark and all); onInstalled → MoveSource.forget.
  sourceForget(n, key);
  n.disk.staged.delete(key);
  n.disk.markers.delete(key);
  n.mem.holds.delete(key);
  m.state = "done";
  m.nextAtMs = ctx.now() + ctx.timing.moveRetryMs;
  ctx.trace(`${n.id} move ${key} done: installed hwm ${staged.highWatermark}`);
}

function fail(ctx: MoveContext, n: SimNode, m: DestMove, reason: string): void {
  const key = partitionKey(m.topic, m.partition);
  m.state = "failed";
  m.error = reason;
  ctx.trace(`${n.id} move ${key} failed: ${reason}`);
  if (owner(ctx, n, m)) return;
  try {
    ctx.call(n, m.from, "moveUnfreeze", (src) => sourceUnfreeze(ctx, src, m.topic, m.partition, m.token));
  } catch {
    // lapses on its own
  }
  n.disk.staged.delete(key);
  n.disk.markers.delete(key);
  n.mem?.holds.delete(key);
}
