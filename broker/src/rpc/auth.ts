// Authentication of the cluster RPC with the shared secret: the client
// interceptor adds narad-cluster-auth (hex HMAC of the secret) to every
// call's metadata; the server interceptor answers UNAUTHENTICATED, before
// any handler runs, to a call without the right value. Both read the value
// through a getter, so a reloaded secret applies to the next call.

import { createHash, timingSafeEqual } from "node:crypto";
import {
  InterceptingCall,
  type Interceptor,
  RequesterBuilder,
  ServerInterceptingCall,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from "@grpc/grpc-js";
import { clusterAuthMetadataKey } from "../auth/cluster-secret.ts";
import { methodName } from "./interceptors.ts";

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

export function clusterAuthClientInterceptor(token: () => string): Interceptor {
  return (options, nextCall) => {
    const requester = new RequesterBuilder()
      .withStart((metadata, listener, next) => {
        metadata.set(clusterAuthMetadataKey, token());
        next(metadata, listener);
      })
      .build();
    return new InterceptingCall(nextCall(options), requester);
  };
}

export interface RejectedCall {
  method: string;
  /** The caller's address as the server saw it. */
  peer: string;
  reason: "missing" | "mismatch";
}

export function clusterAuthServerInterceptor(
  expected: () => string,
  onReject: (call: RejectedCall) => void,
): ServerInterceptor {
  return (methodDescriptor, call) =>
    new ServerInterceptingCall(call, {
      start: (next) => {
        const listener = new ServerListenerBuilder()
          .withOnReceiveMetadata((metadata, nextMetadata) => {
            const got = metadata.get(clusterAuthMetadataKey)[0];
            // Digests have equal lengths, so the comparison is timing-safe whatever was sent.
            if (typeof got === "string" && timingSafeEqual(digest(got), digest(expected()))) {
              nextMetadata(metadata);
              return;
            }
            onReject({
              method: methodName(methodDescriptor.path),
              peer: call.getPeer(),
              reason: got === undefined ? "missing" : "mismatch",
            });
            call.sendStatus({
              code: status.UNAUTHENTICATED,
              details: `cluster RPC refused: ${got === undefined ? "no" : "wrong"} ${clusterAuthMetadataKey} (the nodes' cluster secrets differ)`,
            });
          })
          .build();
        next(listener);
      },
    });
}
