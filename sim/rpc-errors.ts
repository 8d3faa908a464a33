// What a dispatcher sees when a commit RPC fails, built with the broker's own
// status mapping (rpc/status.ts): the owner's thrown error becomes a gRPC
// status (toRpcFailure) and the caller turns it back into a NaradError
// (fromRpcError). So commitNeverApplied / isPartitionMoving judge the sim's
// failures exactly as they judge real ones.

import { status } from "@grpc/grpc-js";
import { fromRpcError, toRpcFailure } from "../broker/src/rpc/status.ts";

class SimServiceError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
    this.details = details;
  }
}

/** The caller's error for an error the owner's handler threw. */
export function callerErrorFor(ownerError: unknown, peer: string): Error {
  const f = toRpcFailure(ownerError);
  return fromRpcError(new SimServiceError(f.code, f.details), peer, 1);
}

/** The caller's error when the peer is not listening (nothing was sent). */
export function neverConnectedError(peer: string): Error {
  return fromRpcError(new SimServiceError(status.UNAVAILABLE, "No connection established"), peer, 1);
}
