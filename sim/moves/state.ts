// What a simulated node keeps about the partition moves it takes part in:
// a destination's move (after broker/src/moves/destination.ts) and a
// source's freeze (after broker/src/moves/source.ts). Kept apart from the
// move logic so the node model can hold them without importing it.

import type { CatchUpProgress } from "../../broker/src/core/move-plan.ts";

export type MoveState = "copying" | "ready" | "done" | "failed";

export interface DestMove {
  topic: string;
  partition: number;
  from: string;
  token: string;
  state: MoveState;
  progress: CatchUpProgress;
  /** When the source last confirmed the freeze; 0 when not frozen by us. */
  frozenAtMs: number;
  destHwm: number;
  nextAtMs: number;
  /** The source confirmed the handoff (its freeze can no longer lapse). */
  handedOff: boolean;
  error?: string;
}

export interface SourceFreeze {
  token: string;
  expiresAtMs: number;
  movedAway: boolean;
  /** The destination installed the copy (source.ts #handOff): only a new install here ends the freeze. */
  handedOff: boolean;
}
