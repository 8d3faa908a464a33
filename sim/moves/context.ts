// What the move models need from the world: views, the clock, the other
// nodes (move RPCs are synchronous calls here that the world may fail), and
// the trace.

import type { Snapshot } from "../model/metastore.ts";
import type { SimNode } from "../model/node.ts";

export class MoveRpcError extends Error {
  readonly code: "NOT_FOUND" | "CONFLICT" | "UNAVAILABLE" | "BAD_REQUEST";
  constructor(code: MoveRpcError["code"], message: string) {
    super(message);
    this.code = code;
  }
}

export interface MoveContext {
  now(): number;
  view(node: SimNode): Snapshot;
  node(id: string): SimNode | undefined;
  /**
   * Runs a move RPC from `from` to `to`: throws UNAVAILABLE when the peer is
   * down or the call is lost before it arrives; `lostAnswer` says whether the
   * world dropped the answer after the handler ran (the caller then sees
   * UNAVAILABLE although the effect happened).
   */
  call<T>(from: SimNode, to: string, what: string, handler: (peer: SimNode) => T): T;
  /**
   * Metastore.authoritativeOwner: the owner by a quorum read of the latest
   * state (not the node's lagging view); "gone" when the topic incarnation is
   * deleted. Throws when the API server is unreachable.
   */
  authoritativeOwner(node: SimNode, topic: string, partition: number): string | "gone";
  trace(msg: string): void;
  crashAt(node: SimNode, point: string): boolean;
  timing: { freezeTtlMs: number; renewIntervalMs: number; moveRetryMs: number; sourceDeleteDelayMs: number };
}
