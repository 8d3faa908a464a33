// The operator's part, as the brokers see it: membership from pod readiness
// (operator/src/plan/members.ts planMembers, called as is), partition moves
// (PUT to the destination, swap the owner when it reports ready, finished
// when it reports done: plan/scale.ts's rules), planned restarts (the member
// is held in Maintenance, drained, restarted), a decommission (moves off,
// drain, Removed, gone) and the topic-deletion finalizer (every member
// removes its local files of the topic before the object goes away:
// controller/topic/delete-data.ts).

import type { Prng } from "../broker/src/testing/prng.ts";
import { planMembers } from "../operator/src/plan/members.ts";
import type { PodView } from "../operator/src/plan/pods.ts";
import type { MemberStatus } from "../packages/api/src/v1alpha1/types.ts";
import type { SimConfig } from "./config.ts";
import { liveTopic, type Metastore, type Snapshot } from "./model/metastore.ts";
import { partitionKey, type SimNode } from "./model/node.ts";
import type { MoveContext } from "./moves/context.ts";
import { destStart } from "./moves/destination.ts";
import { sourceForget } from "./moves/source.ts";

/** The part of the simulated world the operator sees and acts on (World implements it). */
export interface OperatorWorld {
  readonly cfg: SimConfig;
  readonly rng: Prng;
  readonly meta: Metastore;
  readonly nodes: SimNode[];
  readonly diedAt: ReadonlyMap<string, number>;
  readonly moveCtx: MoveContext;
  readonly now: number;
  node(id: string): SimNode | undefined;
  /** The metastore as node n currently sees it (possibly stale). */
  view(n: SimNode): Snapshot;
  log(msg: string): void;
  crashAt(n: SimNode, point: string): boolean;
  crashNode(n: SimNode, restartAfterMs: number, why: string): void;
  retire(n: SimNode): void;
}

export interface OperatorMove {
  topic: string;
  partition: number;
  from: string;
  to: string;
  token: string;
  swapped: boolean;
}

export interface Roll {
  id: string;
  phase: "draining" | "restarting";
  sinceMs: number;
}

export interface Decommission {
  id: string;
  phase: "moving" | "draining" | "removed";
}

export class OperatorModel {
  members: MemberStatus[] = [];
  epoch = 0;
  notReady = new Map<string, number>();
  move: OperatorMove | undefined;
  roll: Roll | undefined;
  decommission: Decommission | undefined;
  decommissioned = false;
  #tokens = 0;

  reconcileMembers(w: OperatorWorld): void {
    const pods: PodView[] = w.nodes
      .filter((n) => !n.retired)
      .map((n) => ({
        name: n.id,
        ordinal: n.ordinal,
        uid: `${n.id}-${n.processEpoch}`,
        podIP: `10.0.0.${n.ordinal + 1}`,
        ready: n.alive,
        notReadySinceMs: n.alive ? undefined : (w.diedAt.get(n.id) ?? w.now),
        terminating: false,
        revision: "r1",
      }));
    const holds = new Map<string, "Decommissioning" | "Removed">();
    if (this.decommission !== undefined)
      holds.set(this.decommission.id, this.decommission.phase === "removed" ? "Removed" : "Decommissioning");
    const r = planMembers({
      statefulSetName: "narad",
      replicas: w.nodes.length - (this.decommission !== undefined || this.decommissioned ? 1 : 0),
      pods,
      previous: this.members,
      previousEpoch: this.epoch,
      downGraceMs: w.cfg.timing.downGraceMs,
      nowMs: w.now,
      notReadySinceMs: this.notReady,
      port: 7942,
      maintenance: new Set(this.roll === undefined ? [] : [this.roll.id]),
      holds,
    });
    this.notReady = r.notReadySinceMs;
    this.epoch = r.epoch;
    this.members = r.members;
    if (r.changed) {
      for (const t of r.transitions) w.log(`operator: ${t}`);
      w.meta.setMembers(
        w.now,
        r.members.map((m) => ({ id: m.id, address: m.address ?? "", state: m.state })),
      );
    }
  }

  /** Starts a move of one partition to `to` (the PUT); false when the destination refused or is unreachable. */
  startMove(w: OperatorWorld, topic: string, partition: number, from: string, to: string): boolean {
    const dest = w.node(to);
    if (dest === undefined || !dest.alive) return false;
    const token = `tok${++this.#tokens}`;
    try {
      destStart(w.moveCtx, dest, topic, partition, from, token);
    } catch (err) {
      w.log(`operator: move ${topic}/${partition} ${from}→${to} refused: ${String(err)}`);
      return false;
    }
    this.move = { topic, partition, from, to, token, swapped: false };
    w.log(`operator: move ${topic}/${partition} ${from}→${to} started`);
    return true;
  }

  /** plan/scale.ts's rules for a move in flight, probing the destination's move status. */
  reconcileMove(w: OperatorWorld): void {
    const m = this.move;
    if (m === undefined) return;
    const key = partitionKey(m.topic, m.partition);
    const owner = liveTopic(w.meta.latest, m.topic)?.owners[m.partition];
    if (owner === undefined || (owner !== m.from && owner !== m.to)) {
      w.log(`operator: move of ${key} abandoned (topic gone or reassigned)`);
      this.move = undefined;
      return;
    }
    const dest = w.node(m.to);
    if (dest === undefined || !dest.alive || dest.mem === undefined) return; // unreachable: keep
    const state = dest.mem.moves.get(key)?.state;
    if (m.swapped) {
      // Swapped: finished once the destination is no longer copying or ready (done, failed, or no such move).
      if (state === "copying" || state === "ready") return;
      w.log(`operator: partition ${key} moved (destination reports ${state ?? "no such move"})`);
      this.move = undefined;
      return;
    }
    if (state === undefined) {
      this.move = undefined;
      this.startMove(w, m.topic, m.partition, m.from, m.to);
    } else if (state === "ready") {
      w.meta.setOwner(w.now, m.topic, m.partition, m.to);
      m.swapped = true;
      w.log(`operator: swapped owner of ${key} to ${m.to}`);
      w.crashAt(dest, "move-swap");
    } else if (state !== "copying") {
      w.log(`operator: move of ${key} ${state} before the swap; dropped`);
      this.move = undefined;
    }
  }

  reconcileRoll(w: OperatorWorld): void {
    const r = this.roll;
    if (r === undefined) return;
    const n = w.node(r.id)!;
    if (r.phase === "draining") {
      const drained = n.alive && n.disk.wal.pending === 0;
      // The real operator waits for the drain; the sim bounds it (the WAL is durable, nothing is lost by restarting).
      if (drained || w.now - r.sinceMs > 3_000) {
        const long = w.cfg.flags.longMaintenance;
        w.crashNode(n, long ? w.rng.range(6_000, 12_000) : w.rng.range(100, 600), "roll restart");
        r.phase = "restarting";
      }
      return;
    }
    if (n.alive) {
      w.log(`operator: roll of ${r.id} done`);
      this.roll = undefined;
    }
  }

  reconcileDecommission(w: OperatorWorld): void {
    const d = this.decommission;
    if (d === undefined) return;
    const n = w.node(d.id)!;
    if (d.phase === "moving") {
      if (this.move !== undefined) return;
      const owned = ownedBy(w, d.id);
      if (owned.length === 0) {
        d.phase = "draining";
        return;
      }
      const targets = this.members.filter(
        (m) => m.state === "Active" && m.id !== d.id && w.node(m.id)?.alive,
      );
      if (targets.length === 0) return;
      const [topic, p] = w.rng.pick(owned);
      this.startMove(w, topic, p, d.id, w.rng.pick(targets).id);
      return;
    }
    if (d.phase === "draining") {
      if (n.alive && n.disk.wal.pending === 0 && heldCopies(n) === 0 && ownedBy(w, d.id).length === 0) {
        d.phase = "removed";
        w.log(`operator: ${d.id} drained, Removed`);
      }
      return;
    }
    // removed: the StatefulSet shrinks once the member is Removed and its WAL is empty (preStop drain).
    if (n.alive && n.disk.wal.pending === 0) {
      w.retire(n);
      this.decommission = undefined;
      this.decommissioned = true;
    }
  }

  /** delete-data.ts: every non-Removed member must confirm its files are gone; Down/unready ones are waited for. */
  reconcileDeletions(w: OperatorWorld): void {
    for (const t of w.meta.latest.topics.values()) {
      if (!t.deleting) continue;
      let all = true;
      for (const m of this.members) {
        if (m.state === "Removed") continue;
        const n = w.node(m.id);
        if (n === undefined || n.retired) continue;
        if (m.state === "Down" || !n.alive || n.mem === undefined) {
          all = false;
          continue;
        }
        if (liveTopic(w.view(n), t.name) !== undefined) {
          all = false; // "still exists here": the broker refuses until its replica caught up
          continue;
        }
        for (const key of [...n.disk.logs.keys()]) {
          if (!key.startsWith(`${t.name}/`)) continue;
          n.disk.logs.delete(key);
          // The partition directory goes with its moved-away mark; the freeze of the deleted incarnation ends.
          sourceForget(n, key);
        }
      }
      if (all) {
        w.meta.removeTopic(w.now, t.name);
        w.log(`operator: topic ${t.name} (uid ${t.uid}) finalizer removed`);
      }
    }
  }
}

function ownedBy(w: OperatorWorld, id: string): [string, number][] {
  const out: [string, number][] = [];
  for (const t of w.meta.latest.topics.values()) {
    if (t.deleting) continue;
    t.owners.forEach((o, p) => {
      if (o === id) out.push([t.name, p]);
    });
  }
  return out;
}

/** moves/source.ts heldCopies(): moved-away freezes still kept (what the decommission probe reports). */
function heldCopies(n: SimNode): number {
  let c = 0;
  for (const f of n.mem?.freezes.values() ?? []) if (f.movedAway) c++;
  return c;
}
