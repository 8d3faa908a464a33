// A tiny in-process HTTP server standing in for a broker in unit tests: each
// test sets `handle` and reads `requests`.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: Buffer;
  at: number;
}

export type FakeHandler = (req: SeenRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeBroker {
  url: string;
  requests: SeenRequest[];
  handle: FakeHandler;
  close(): Promise<void>;
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

export function topicJson(
  name: string,
  partitions: number,
  visibilityTimeoutMs = 30_000,
): Record<string, unknown> {
  return {
    name,
    partitions,
    retention_ms: 604_800_000,
    retention_bytes: 0,
    visibility_timeout_ms: visibilityTimeoutMs,
    max_in_flight_per_partition: 1000,
    max_acked_ahead_per_partition: 10000,
    created_at: "2026-01-01T00:00:00.000Z",
    partition_stats: [],
  };
}

export async function startFakeBroker(
  handle: FakeHandler = (_q, res) => json(res, 404, {}),
): Promise<FakeBroker> {
  const fake: FakeBroker = { url: "", requests: [], handle, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const u = new URL(req.url ?? "/", "http://x");
      const seen: SeenRequest = {
        method: req.method ?? "GET",
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: Date.now(),
      };
      fake.requests.push(seen);
      Promise.resolve(fake.handle(seen, res)).catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}
