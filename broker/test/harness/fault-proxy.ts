// An HTTP proxy between a client and a real broker process that injects the
// faults a producer's retries must survive: a request held before it is
// forwarded (so requests reach the broker in another order than they were
// sent), an answer dropped after the broker produced it (the client sees
// a reset connection although the broker did the work), and a request
// dropped before it reaches the broker (the same reset, nothing done). A held
// request is forwarded even after the client gave up on it (timed out, closed
// the connection): an abandoned attempt that lands late. Which requests and
// answers are hit is the test's plan; the proxy counts what it did.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ProxiedRequest {
  method: string;
  url: string;
  /** The request's narad-* headers (producer id, epoch, seq), lower-case names. */
  headers: Record<string, string>;
}

export interface FaultPlan {
  /** Milliseconds to hold a request before forwarding it (0 or undefined: at once). */
  delayRequest?(req: ProxiedRequest): number;
  /** true: reset the client's connection instead of forwarding the broker's answer. */
  dropAnswer?(req: ProxiedRequest, status: number): boolean;
  /** true: reset the client's connection without forwarding the request. */
  dropRequest?(req: ProxiedRequest): boolean;
}

export interface FaultProxy {
  url: string;
  /** Answers dropped after the broker answered. */
  dropped: number;
  /** Requests dropped before the broker saw them. */
  droppedRequests: number;
  /** Requests held before forwarding. */
  delayed: number;
  /** Held requests forwarded after the client had given up on them (its connection closed). */
  deliveredLate: number;
  /** Held requests not forwarded yet. */
  holding: number;
  /** Most requests in progress at once. */
  maxConcurrent: number;
  close(): Promise<void>;
}

/** A produce-batch request (the requests a producer's faults are about). */
export const isProduceBatch = (req: ProxiedRequest): boolean => req.url.includes("/produce-batch");

export async function startFaultProxy(target: string, plan: FaultPlan = {}): Promise<FaultProxy> {
  const proxy: FaultProxy = {
    url: "",
    dropped: 0,
    droppedRequests: 0,
    delayed: 0,
    deliveredLate: 0,
    holding: 0,
    maxConcurrent: 0,
    close: async () => {},
  };
  let concurrent = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const narad: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k.startsWith("narad-")) narad[k] = v;
      const r: ProxiedRequest = { method: req.method ?? "GET", url: req.url ?? "/", headers: narad };
      concurrent++;
      proxy.maxConcurrent = Math.max(proxy.maxConcurrent, concurrent);
      try {
        const hold = plan.delayRequest?.(r) ?? 0;
        if (hold > 0) {
          proxy.delayed++;
          proxy.holding++;
          await new Promise((ok) => setTimeout(ok, hold));
          proxy.holding--;
          // Forwarded all the same: a request the client abandoned still reaches the broker.
          if (req.socket.destroyed) proxy.deliveredLate++;
        }
        if (plan.dropRequest?.(r) === true) {
          proxy.droppedRequests++;
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) {
          if (
            typeof v === "string" &&
            (k === "content-type" || k === "authorization" || k.startsWith("narad-"))
          )
            headers[k] = v;
        }
        let up: Response;
        try {
          up = await fetch(`${target}${r.url}`, {
            method: r.method,
            headers,
            ...(r.method === "GET" || r.method === "HEAD" ? {} : { body: Buffer.concat(chunks) }),
          });
        } catch {
          // The broker is down (killed, restarting): a retryable 503.
          res.writeHead(503, { "content-type": "application/json", "retry-after": "0" });
          res.end(JSON.stringify({ error: "proxy: broker unreachable" }));
          return;
        }
        const body = Buffer.from(await up.arrayBuffer());
        if (plan.dropAnswer?.(r, up.status) === true) {
          proxy.dropped++;
          req.socket.destroy();
          return;
        }
        const out: Record<string, string> = {};
        for (const h of ["content-type", "retry-after"]) {
          const v = up.headers.get(h);
          if (v !== null) out[h] = v;
        }
        res.writeHead(up.status, out);
        res.end(body);
      } finally {
        concurrent--;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return proxy;
}
