// Client interceptors for the cluster RPC: layers around every peer call
// instead of branches inside the client (docs: undici's composed
// interceptors). deadline: a call without one gets the default, so no call
// can wait forever on a silent peer. metrics: latency and final status per
// method.

import { InterceptingCall, type Interceptor, ListenerBuilder, RequesterBuilder, status } from "@grpc/grpc-js";
import type { RpcMetrics } from "./metrics.ts";

/** "/narad.v1.Cluster/CommitBatch" → "CommitBatch". */
export function methodName(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? path : path.slice(i + 1);
}

export function defaultDeadlineInterceptor(defaultMs: number, nowMs: () => number = Date.now): Interceptor {
  return (options, nextCall) => {
    const withDeadline =
      options.deadline === undefined ? { ...options, deadline: nowMs() + defaultMs } : options;
    return new InterceptingCall(nextCall(withDeadline));
  };
}

export function metricsInterceptor(metrics: RpcMetrics): Interceptor {
  return (options, nextCall) => {
    const method = methodName(options.method_definition.path);
    const started = performance.now();
    const requester = new RequesterBuilder()
      .withStart((metadata, _listener, next) => {
        const observed = new ListenerBuilder()
          .withOnReceiveStatus((st, nextStatus) => {
            metrics.clientRequests.inc({ method, code: status[st.code] ?? String(st.code) });
            metrics.clientSeconds.observe({ method }, (performance.now() - started) / 1000);
            nextStatus(st);
          })
          .build();
        next(metadata, observed);
      })
      .build();
    return new InterceptingCall(nextCall(options), requester);
  };
}
