// The properties checked after every step (and, for the ones that need a
// settled system, after the quiesce phase). Each returns violations as text
// instead of throwing, so the runner can print the trace that led there.
//
//  wrong-incarnation  no record is ever committed into a topic incarnation
//                     other than the one it was produced into
//  bad-discard        a record is discarded only when its topic incarnation
//                     really was deleted (the stale-replica defense)
//  duplicate          no record is readable twice (per topic incarnation)
//  hwm                nothing is visible above a log's HWM, and the dedup
//                     map only covers visible frames (else a re-send of a
//                     record that is not visible would be dropped as a dup)
//  stall              a partition with a healthy owner makes progress
//  lost               after quiesce, every acknowledged record of a live
//                     topic is readable exactly once

import type { Ghost, Ghosts } from "./ghosts.ts";
import { liveTopic, type Snapshot } from "./model/metastore.ts";
import { partitionKey, type SimNode } from "./model/node.ts";
import type { SimPartitionLog } from "./model/partition-log.ts";

export interface Violation {
  kind: "wrong-incarnation" | "bad-discard" | "duplicate" | "hwm" | "stall" | "lost" | "not-drained";
  message: string;
}

export function checkCommitted(
  ghosts: Ghosts,
  log: SimPartitionLog,
  ids: readonly string[],
  where: string,
): Violation[] {
  const out: Violation[] = [];
  for (const id of ids) {
    const g = ghosts.get(id);
    if (g !== undefined && g.uid !== log.uid)
      out.push({
        kind: "wrong-incarnation",
        message: `${id} (topic ${g.topic} uid ${g.uid}, ingress ${g.ingress}) committed into ${where} of uid ${log.uid}`,
      });
  }
  return out;
}

export function checkDiscarded(g: Ghost, latest: Snapshot): Violation[] {
  const t = latest.topics.get(g.topic);
  if (t !== undefined && t.uid === g.uid && !t.deleting)
    return [
      { kind: "bad-discard", message: `${g.id} discarded but its topic ${g.topic} uid ${g.uid} is live` },
    ];
  return [];
}

/** The log readers are served from: the owner's live, installed log of that incarnation. */
export function readableLog(
  latest: Snapshot,
  nodes: readonly SimNode[],
  topic: string,
  p: number,
): SimPartitionLog | undefined {
  const t = liveTopic(latest, topic);
  if (t === undefined) return undefined;
  const owner = nodes.find((n) => n.id === t.owners[p]);
  if (owner === undefined) return undefined;
  const key = partitionKey(topic, p);
  if (owner.mem?.holds.has(key) === true) return undefined;
  return owner.disk.logs.get(key);
}

/** Readable copies of each record id, over every live topic (ids are globally unique). */
export function readableCopies(latest: Snapshot, nodes: readonly SimNode[]): Map<string, string[]> {
  const copies = new Map<string, string[]>();
  for (const t of latest.topics.values()) {
    if (t.deleting) continue;
    for (let p = 0; p < t.partitions; p++) {
      const log = readableLog(latest, nodes, t.name, p);
      if (log === undefined || log.uid !== t.uid) continue;
      for (const f of log.frames.slice(0, log.highWatermark)) {
        const where = `${t.name}/${p}@${t.owners[p]}#${f.offset}`;
        const c = copies.get(f.id);
        if (c === undefined) copies.set(f.id, [where]);
        else c.push(where);
      }
    }
  }
  return copies;
}

export function checkDuplicates(copies: Map<string, string[]>, ghosts: Ghosts): Violation[] {
  const out: Violation[] = [];
  for (const [id, where] of copies) {
    if (where.length > 1 && !ghosts.excused(id))
      out.push({ kind: "duplicate", message: `${id} readable ${where.length} times: ${where.join(", ")}` });
  }
  return out;
}

export function checkHwm(nodes: readonly SimNode[]): Violation[] {
  const out: Violation[] = [];
  for (const n of nodes) {
    for (const [key, log] of n.disk.logs) {
      if (log.highWatermark > log.frames.length)
        out.push({
          kind: "hwm",
          message: `${n.id} ${key}: HWM ${log.highWatermark} above ${log.frames.length} frames`,
        });
      const top = new Map<string, number>();
      for (const f of log.frames.slice(0, log.highWatermark))
        top.set(f.incarnation, Math.max(top.get(f.incarnation) ?? -1, f.seq));
      for (const [inc, seq] of log.dedup)
        if ((top.get(inc) ?? -1) < seq)
          out.push({
            kind: "hwm",
            message: `${n.id} ${key}: dedup says ${inc}/${seq} committed but no visible frame has it`,
          });
    }
  }
  return out;
}

/** After quiesce: every acknowledged record of a live incarnation is readable exactly once. */
export function checkExactlyOnce(
  copies: Map<string, string[]>,
  ghosts: Ghosts,
  latest: Snapshot,
): Violation[] {
  const out: Violation[] = [];
  for (const g of ghosts.all.values()) {
    if (!g.acked) continue;
    const t = latest.topics.get(g.topic);
    const live = t !== undefined && !t.deleting && t.uid === g.uid;
    const n = copies.get(g.id)?.length ?? 0;
    if (live && n === 0)
      out.push({
        kind: "lost",
        message: `${g.id} (topic ${g.topic} uid ${g.uid}, ingress ${g.ingress}${g.discarded ? ", discarded" : ""}) acknowledged but not readable`,
      });
  }
  return out;
}
