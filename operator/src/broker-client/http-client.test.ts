import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpBrokerClient, parseStatus } from "./http-client.ts";
import { BrokerClientError } from "./types.ts";

let server: Server;
let port = 0;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (req.url === "/admin/v1/status") {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          nodeId: "demo-0",
          ready: true,
          draining: false,
          drained: true,
          wal: { pendingRecords: 3, checkpoint: 10, nextSeq: 13, segments: 1 },
        }),
      );
    } else if (req.url === "/admin/v1/drain?wait_ms=250" || req.url === "/admin/v1/drain") {
      const wait = req.method === "POST" ? 250 : 0;
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            nodeId: "demo-0",
            ready: false,
            draining: req.method === "POST",
            drained: true,
            wal: { pendingRecords: 0, checkpoint: 13, nextSeq: 13, segments: 1 },
          }),
        );
      }, wait);
    } else if (req.url === "/admin/v1/topics/gone/data") {
      res.statusCode = 204;
      res.end();
    } else if (req.url === "/admin/v1/topics/still-here/data") {
      res.statusCode = 409;
      res.end('{"error":"topic \\"still-here\\" still exists here"}');
    } else {
      res.statusCode = 500;
      res.end("boom");
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

describe("HttpBrokerClient", () => {
  const ep = { podIP: "127.0.0.1", id: "demo-0" };

  it("reads status", async () => {
    const c = new HttpBrokerClient({ port });
    expect(await c.status(ep)).toEqual({
      nodeId: "demo-0",
      ready: true,
      draining: false,
      wal: { pendingRecords: 3, checkpoint: 10, nextSeq: 13 },
    });
  });

  it("deletes topic data: 204 is done, 409 is not yet, 500 throws", async () => {
    const c = new HttpBrokerClient({ port });
    expect(await c.deleteTopicData(ep, "gone")).toEqual({ done: true });
    const later = await c.deleteTopicData(ep, "still-here");
    expect(later.done).toBe(false);
    expect(later.done === false && later.reason).toContain("409");
    await expect(c.deleteTopicData(ep, "other")).rejects.toBeInstanceOf(BrokerClientError);
    expect(seen).toContain("DELETE /admin/v1/topics/gone/data");
  });

  it("drains (waiting longer than its own timeout for the broker's bounded wait) and cancels", async () => {
    const c = new HttpBrokerClient({ port, timeoutMs: 100 });
    const s = await c.drain(ep, 250);
    expect(s).toMatchObject({ draining: true, wal: { pendingRecords: 0 } });
    expect(seen).toContain("POST /admin/v1/drain?wait_ms=250");
    expect((await c.cancelDrain(ep)).draining).toBe(false);
    expect(seen).toContain("DELETE /admin/v1/drain");
  });

  it("wraps connection failures", async () => {
    const c = new HttpBrokerClient({ port: 1, timeoutMs: 2000 });
    await expect(c.status(ep)).rejects.toThrow(/broker demo-0: GET http:\/\/127.0.0.1:1/);
  });

  it("rejects a malformed status", () => {
    expect(() => parseStatus("x", { nodeId: "x" })).toThrow(/malformed/);
  });
});
