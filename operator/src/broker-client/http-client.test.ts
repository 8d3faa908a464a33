import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpBrokerClient, parseMove, parseStatus } from "./http-client.ts";
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
    } else if (req.url?.startsWith("/admin/v1/moves/")) {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString();
      });
      req.on("end", () => {
        if (req.url === "/admin/v1/moves/unknown/0") {
          res.statusCode = req.method === "DELETE" ? 404 : 404;
          res.end('{"error":"no move"}');
          return;
        }
        if (req.method === "DELETE") {
          res.statusCode = req.url === "/admin/v1/moves/orders%2Feu/1" ? 409 : 200;
          res.end("{}");
          return;
        }
        seen.push(`body ${body}`);
        res.statusCode = req.method === "PUT" ? 202 : 200;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ state: "copying", copiedBytes: 10, sourceHwm: 5, destHwm: 2, rounds: 1 }));
      });
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

  it("starts, reads and cancels partition moves on the destination", async () => {
    const c = new HttpBrokerClient({ port });
    const move = { state: "copying", copiedBytes: 10, sourceHwm: 5, destHwm: 2 };
    expect(await c.startMove(ep, "orders/eu", 1, "demo-3")).toEqual(move);
    expect(seen).toContain("PUT /admin/v1/moves/orders%2Feu/1");
    expect(seen).toContain('body {"from":"demo-3"}');
    expect(await c.getMove(ep, "orders/eu", 1)).toEqual(move);
    expect(await c.getMove(ep, "unknown", 0)).toBeUndefined();
    // 409 (already done) and 404 (unknown) end the matter too.
    await c.cancelMove(ep, "orders/eu", 1);
    await c.cancelMove(ep, "unknown", 0);
    expect(seen).toContain("DELETE /admin/v1/moves/orders%2Feu/1");
  });

  it("reads ownedPartitions when the broker reports it", () => {
    const s = parseStatus("x", {
      nodeId: "x",
      ready: true,
      draining: false,
      ownedPartitions: 4,
      wal: { pendingRecords: 0, checkpoint: 0, nextSeq: 0 },
    });
    expect(s.ownedPartitions).toBe(4);
    expect(() => parseMove("x", { state: "weird" })).toThrow(/malformed move/);
  });

  it("reads the volume identity: created/own with its uuid, foreign with its reason; ignores what it does not understand", () => {
    const base = {
      nodeId: "x",
      ready: true,
      draining: false,
      wal: { pendingRecords: 0, checkpoint: 0, nextSeq: 0 },
    };
    const uuid = "0b7e6c1a-3f0e-4d8e-9a43-5d2f3f0c9e11";
    expect(parseStatus("x", { ...base, volume: { state: "created", uuid, memberId: "x" } }).volume).toEqual({
      state: "created",
      uuid,
      memberId: "x",
    });
    expect(parseStatus("x", { ...base, volume: { state: "own", uuid, memberId: "x" } }).volume?.state).toBe(
      "own",
    );
    expect(
      parseStatus("x", { ...base, volume: { state: "foreign", reason: "another member", uuid: null } })
        .volume,
    ).toEqual({ state: "foreign", reason: "another member", uuid: null });
    expect(parseStatus("x", base).volume).toBeUndefined();
    expect(parseStatus("x", { ...base, volume: { state: "own", uuid: "" } }).volume).toBeUndefined();
    expect(parseStatus("x", { ...base, volume: { state: "lost" } }).volume).toBeUndefined();
  });

  it("#21.6: a reply from another node (reused pod IP) is an error, and no side effect is sent to it", async () => {
    const c = new HttpBrokerClient({ port });
    const wrong = { podIP: "127.0.0.1", id: "demo-9" };
    const before = seen.length;
    await expect(c.status(wrong)).rejects.toThrow(/answered as node "demo-0", not demo-9/);
    await expect(c.drain(wrong, 250)).rejects.toBeInstanceOf(BrokerClientError);
    await expect(c.cancelDrain(wrong)).rejects.toBeInstanceOf(BrokerClientError);
    await expect(c.startMove(wrong, "orders/eu", 1, "demo-3")).rejects.toBeInstanceOf(BrokerClientError);
    await expect(c.getMove(wrong, "orders/eu", 1)).rejects.toBeInstanceOf(BrokerClientError);
    await expect(c.cancelMove(wrong, "orders/eu", 1)).rejects.toBeInstanceOf(BrokerClientError);
    await expect(c.deleteTopicData(wrong, "gone")).rejects.toBeInstanceOf(BrokerClientError);
    // only status reads reached it
    expect(seen.slice(before).filter((r) => r !== "GET /admin/v1/status")).toEqual([]);
  });

  it("wraps connection failures", async () => {
    const c = new HttpBrokerClient({ port: 1, timeoutMs: 2000 });
    await expect(c.status(ep)).rejects.toThrow(/broker demo-0: GET http:\/\/127.0.0.1:1/);
  });

  it("rejects a malformed status", () => {
    expect(() => parseStatus("x", { nodeId: "x" })).toThrow(/malformed/);
  });
});
