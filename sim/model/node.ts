// One broker's state, split the way a crash splits it: `disk` survives a
// restart (WAL, partition logs, staged move copies and markers, moved-away
// marks), everything else is process memory and is rebuilt at restart.

import type { SimDispatcher } from "../dispatcher.ts";
import type { DestMove, SourceFreeze } from "../moves/state.ts";
import type { SimPartitionLog } from "./partition-log.ts";
import { SimWal } from "./wal.ts";

export interface MoveMarker {
  topic: string;
  partition: number;
  from: string;
  token: string;
}

export interface NodeDisk {
  wal: SimWal;
  /** "topic/partition" → the live partition log. */
  logs: Map<string, SimPartitionLog>;
  /** Staged copies of partitions being moved in (moves/<topic>/pNNNNN). */
  staged: Map<string, SimPartitionLog>;
  /** Move-in markers (moves/<topic>/pNNNNN.json). */
  markers: Map<string, MoveMarker>;
  /** Partitions given away whose local copy waits for deletion (the moved-away file). */
  movedAway: Set<string>;
  /** Moved-away partitions whose mark says "handoff" (the destination confirmed the install). */
  handedOff: Set<string>;
  /**
   * Freezes in force (the move-freeze file: key → token). A restarted source
   * freezes these again for a whole ttl: the destination still counts on them.
   */
  freezeMarks: Map<string, string>;
}

export interface NodeMemory {
  /** Metastore snapshot version this process's replica has. */
  viewVersion: number;
  dispatcher: SimDispatcher;
  /** Partitions the log store holds for a move in (PARTITION_MOVING). */
  holds: Set<string>;
  freezes: Map<string, SourceFreeze>;
  /** Source-side deletions of moved-away copies: key → when due. */
  deletions: Map<string, number>;
  moves: Map<string, DestMove>;
}

export interface SimNode {
  id: string;
  ordinal: number;
  alive: boolean;
  /** Permanently gone (scaled down after Removed). */
  retired: boolean;
  /** Bumped at every start: answers addressed to an earlier process are dropped. */
  processEpoch: number;
  disk: NodeDisk;
  mem: NodeMemory | undefined;
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

export function newDisk(incarnation: string): NodeDisk {
  return {
    wal: new SimWal(incarnation),
    logs: new Map(),
    staged: new Map(),
    markers: new Map(),
    movedAway: new Set(),
    handedOff: new Set(),
    freezeMarks: new Map(),
  };
}
