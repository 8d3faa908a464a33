// The source side of a partition move, after broker/src/moves/source.ts:
// freezes with a token and a ttl (renewed by the destination), lapse when
// not renewed, turn permanent once this node's view shows another owner
// (moved-away), and delete the local copy after a delay once the new owner
// serves at least our HWM. A freeze in force is remembered on disk (the
// move-freeze mark): a source that restarts freezes it again for a whole ttl,
// because the destination may install on the strength of it. A freeze that
// lapses first asks the authority who owns the partition: a view lagging the
// swap must not reopen a copy given away.

import { liveTopic, ownerOf } from "../model/metastore.ts";
import { partitionKey, type SimNode } from "../model/node.ts";
import { SimPartitionLog } from "../model/partition-log.ts";
import { type MoveContext, MoveRpcError } from "./context.ts";
import type { SourceFreeze } from "./state.ts";

export interface SourceManifest {
  highWatermark: number;
  bytes: number;
  frozen: boolean;
  /** The copy itself: the staged bytes are a prefix of the source's (fetch). */
  log: SimPartitionLog;
}

function mem(n: SimNode) {
  if (n.mem === undefined) throw new MoveRpcError("UNAVAILABLE", `${n.id} is down`);
  return n.mem;
}

/** moves/source.ts #check: a move copies from the owner or a former owner that still has the partition. */
function check(ctx: MoveContext, n: SimNode, topic: string, partition: number): SimPartitionLog {
  const v = ctx.view(n);
  const t = liveTopic(v, topic);
  if (t === undefined) throw new MoveRpcError("NOT_FOUND", `topic ${topic} not found`);
  if (partition >= t.partitions) throw new MoveRpcError("BAD_REQUEST", "partition out of range");
  const key = partitionKey(topic, partition);
  const log = n.disk.logs.get(key);
  const ok = ownerOf(v, topic, partition) === n.id || mem(n).freezes.has(key) || log !== undefined;
  if (!ok) throw new MoveRpcError("CONFLICT", `${n.id} neither owns nor holds ${key}`);
  // logs.get opens (creates) the log of a partition this node owns.
  return log ?? openLog(ctx, n, topic, partition);
}

export function openLog(ctx: MoveContext, n: SimNode, topic: string, partition: number): SimPartitionLog {
  const key = partitionKey(topic, partition);
  let log = n.disk.logs.get(key);
  if (log === undefined) {
    const t = liveTopic(ctx.view(n), topic);
    log = newLog(t?.uid ?? 0);
    n.disk.logs.set(key, log);
  }
  return log;
}

function newLog(uid: number): SimPartitionLog {
  return new SimPartitionLog(uid);
}

export function sourceManifest(
  ctx: MoveContext,
  n: SimNode,
  topic: string,
  partition: number,
): SourceManifest {
  const log = check(ctx, n, topic, partition);
  return { highWatermark: log.highWatermark, bytes: log.bytes, frozen: log.frozen, log };
}

export function sourceFreeze(
  ctx: MoveContext,
  n: SimNode,
  topic: string,
  partition: number,
  token: string,
  ttlMs: number,
  handoff = false,
): SourceManifest {
  const log = check(ctx, n, topic, partition);
  const m = mem(n);
  const key = partitionKey(topic, partition);
  const held = m.freezes.get(key);
  // A given-away copy stays frozen for good, so any move may renew it (a
  // restarted source re-freezes it under no token of the move finishing: F2).
  if (held !== undefined && held.token !== token && !held.movedAway)
    throw new MoveRpcError("CONFLICT", `${key} frozen by another move`);
  // A handoff confirms a freeze the destination installed on; with none held
  // it is a stale move's (the partition moved back and was installed here
  // afresh): taking it would freeze the live partition for good.
  if (handoff && held === undefined) throw new MoveRpcError("CONFLICT", `${key} holds no freeze to hand off`);
  let f = held;
  if (f === undefined) {
    f = { token, expiresAtMs: 0, movedAway: false, handedOff: false };
    m.freezes.set(key, f);
    n.disk.freezeMarks.set(key, token);
    ctx.trace(`${n.id} source froze ${key}`);
  }
  if (!f.movedAway) f.expiresAtMs = ctx.now() + Math.max(1, ttlMs);
  log.frozen = true;
  if (handoff) {
    // The destination installed: whatever our view says, nothing may land here again.
    if (!f.handedOff) ctx.trace(`${n.id} source: ${key} handed off`);
    f.handedOff = true;
    n.disk.handedOff.add(key);
    movedAway(ctx, n, key, f);
  } else if (ownerOf(ctx.view(n), topic, partition) !== n.id) movedAway(ctx, n, key, f);
  return { highWatermark: log.highWatermark, bytes: log.bytes, frozen: true, log };
}

export function sourceUnfreeze(
  ctx: MoveContext,
  n: SimNode,
  topic: string,
  partition: number,
  token: string,
): void {
  const key = partitionKey(topic, partition);
  const f = mem(n).freezes.get(key);
  if (f === undefined || f.token !== token || f.movedAway) return;
  endFreeze(ctx, n, key);
}

/** MoveSource.forget: this node installed a fresh copy (a move back); the old freeze and marks are gone. */
export function sourceForget(n: SimNode, key: string): void {
  n.mem?.freezes.delete(key);
  n.mem?.deletions.delete(key);
  n.disk.movedAway.delete(key);
  n.disk.handedOff.delete(key);
  n.disk.freezeMarks.delete(key);
}

function endFreeze(ctx: MoveContext, n: SimNode, key: string): void {
  const m = mem(n);
  if (!m.freezes.delete(key)) return;
  n.disk.freezeMarks.delete(key);
  const log = n.disk.logs.get(key);
  if (log !== undefined) log.frozen = false;
  ctx.trace(`${n.id} source unfroze ${key}`);
}

function movedAway(ctx: MoveContext, n: SimNode, key: string, f: SourceFreeze): void {
  if (f.movedAway) return;
  f.movedAway = true;
  n.disk.movedAway.add(key);
  mem(n).deletions.set(key, ctx.now() + ctx.timing.sourceDeleteDelayMs);
  ctx.trace(`${n.id} source: ${key} moved away, copy kept frozen until the new owner serves it`);
}

/** The metastore onChange handler (#ownershipChanged). */
export function sourceViewChanged(ctx: MoveContext, n: SimNode): void {
  const m = mem(n);
  const v = ctx.view(n);
  for (const [key, f] of [...m.freezes]) {
    const [topic, p] = splitKey(key);
    if (liveTopic(v, topic) === undefined) {
      m.freezes.delete(key);
      n.disk.freezeMarks.delete(key);
      continue;
    }
    if (ownerOf(v, topic, p) !== n.id) movedAway(ctx, n, key, f);
  }
}

/** Timers: freezes that lapse, moved-away copies whose deletion is due. */
export function sourceTick(ctx: MoveContext, n: SimNode): void {
  const m = mem(n);
  const now = ctx.now();
  for (const [key, f] of [...m.freezes]) {
    if (!f.movedAway && f.expiresAtMs <= now) lapse(ctx, n, key, f);
  }
  for (const [key, due] of [...m.deletions]) {
    if (due > now) continue;
    m.deletions.delete(key);
    deleteMovedAway(ctx, n, key);
    if (n.mem === undefined) return;
  }
}

/** MoveSource.#lapse: not renewed; commits resume only if the authority still names this node owner. */
function lapse(ctx: MoveContext, n: SimNode, key: string, f: SourceFreeze): void {
  const [topic, p] = splitKey(key);
  let owner: string;
  try {
    owner = ctx.authoritativeOwner(n, topic, p);
  } catch {
    ctx.trace(`${n.id} source: freeze of ${key} lapsed, owner unconfirmed; staying frozen`);
    f.expiresAtMs = ctx.now() + ctx.timing.renewIntervalMs;
    return;
  }
  if (owner === "gone" || owner === n.id) {
    ctx.trace(`${n.id} source: freeze of ${key} lapsed`);
    endFreeze(ctx, n, key);
    return;
  }
  ctx.trace(`${n.id} source: freeze of ${key} lapsed, but ${owner} owns it now`);
  movedAway(ctx, n, key, f);
}

function deleteMovedAway(ctx: MoveContext, n: SimNode, key: string): void {
  const m = mem(n);
  const [topic, p] = splitKey(key);
  const v = ctx.view(n);
  if (liveTopic(v, topic) === undefined) return;
  const owner = ownerOf(v, topic, p);
  if (owner === n.id) {
    const f = m.freezes.get(key);
    if (f?.handedOff === true) {
      // Our view lags the swap the destination already acted on: stay frozen, look again later.
      m.deletions.set(key, ctx.now() + ctx.timing.sourceDeleteDelayMs);
      return;
    }
    // Owned again by our view, which may lag a swap a lapse saw through the authority.
    let owner: string;
    try {
      owner = ctx.authoritativeOwner(n, topic, p);
    } catch {
      m.deletions.set(key, ctx.now() + ctx.timing.sourceDeleteDelayMs);
      return;
    }
    if (owner !== "gone" && owner !== n.id) {
      m.deletions.set(key, ctx.now() + ctx.timing.sourceDeleteDelayMs);
      return;
    }
    if (f !== undefined) f.movedAway = false;
    endFreeze(ctx, n, key);
    return;
  }
  try {
    const oursLog = n.disk.logs.get(key);
    const ours = oursLog?.highWatermark ?? 0;
    // MoveVerify: the new owner's checksums of our segments (modelled as the
    // frames themselves), never its HWM alone.
    const theirs = ctx.call(n, owner, "moveVerify", (peer) => {
      const pv = ctx.view(peer);
      if (ownerOf(pv, topic, p) !== peer.id) throw new MoveRpcError("UNAVAILABLE", "not owner");
      if (peer.mem?.holds.has(key) === true) throw new MoveRpcError("UNAVAILABLE", "PARTITION_MOVING");
      return (
        peer.disk.logs
          .get(key)
          ?.frames.slice(0, ours)
          .map((f) => ({ ...f })) ?? []
      );
    });
    if (theirs.length < ours) throw new Error(`new owner's HWM ${theirs.length} below ours ${ours}`);
    const differs = (oursLog?.frames ?? []).findIndex(
      (f, i) =>
        theirs[i]?.id !== f.id || theirs[i]?.seq !== f.seq || theirs[i]?.incarnation !== f.incarnation,
    );
    if (differs >= 0) throw new Error(`the new owner's copy differs from ours at offset ${differs}`);
    if (ctx.crashAt(n, "move-delete")) return;
    n.disk.logs.delete(key);
    n.disk.movedAway.delete(key);
    n.disk.handedOff.delete(key);
    n.disk.freezeMarks.delete(key);
    m.freezes.delete(key);
    ctx.trace(
      `${n.id} source deleted moved-away copy ${key} (ours ${ours}, theirs ${theirs.length}, same frames)`,
    );
  } catch (err) {
    ctx.trace(`${n.id} source keeps ${key}: ${err instanceof Error ? err.message : String(err)}`);
    m.deletions.set(key, ctx.now() + ctx.timing.sourceDeleteDelayMs);
  }
}

/** After a restart (#resume): moved-away marks are frozen again and scheduled for deletion. */
export function sourceResume(ctx: MoveContext, n: SimNode): void {
  const v = ctx.view(n);
  for (const key of [...n.disk.movedAway]) {
    const [topic, p] = splitKey(key);
    const log = n.disk.logs.get(key);
    if (liveTopic(v, topic) === undefined || log === undefined) continue;
    const owner = ownerOf(v, topic, p);
    // A handed-off copy stays frozen even if our view names us owner: it lags the install.
    const handedOff = n.disk.handedOff.has(key);
    if (owner === n.id && !handedOff) {
      n.disk.movedAway.delete(key);
      continue;
    }
    if (owner === "" && !handedOff) continue;
    log.frozen = true;
    const f: SourceFreeze = { token: "", expiresAtMs: 0, movedAway: false, handedOff };
    mem(n).freezes.set(key, f);
    movedAway(ctx, n, key, f);
  }
  // Freezes in force at the crash: a destination may install counting on
  // them, so they hold for a whole ttl from now, under the same token.
  for (const [key, token] of [...n.disk.freezeMarks]) {
    const [topic, p] = splitKey(key);
    const log = n.disk.logs.get(key);
    if (mem(n).freezes.has(key)) continue;
    if (liveTopic(v, topic) === undefined || log === undefined) {
      n.disk.freezeMarks.delete(key);
      continue;
    }
    log.frozen = true;
    const f: SourceFreeze = {
      token,
      expiresAtMs: ctx.now() + ctx.timing.freezeTtlMs,
      movedAway: false,
      handedOff: false,
    };
    mem(n).freezes.set(key, f);
    ctx.trace(`${n.id} source: ${key} frozen again after the restart`);
    if (ownerOf(v, topic, p) !== n.id) movedAway(ctx, n, key, f);
  }
}

export function splitKey(key: string): [string, number] {
  const i = key.lastIndexOf("/");
  return [key.slice(0, i), Number(key.slice(i + 1))];
}
