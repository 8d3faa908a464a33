import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { needsLoopbackForward, startLoopbackForward } from "./loopback-forward.ts";

const logger = pino({ level: "silent" });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** An HTTP server on 127.0.0.2 (standing in for a pod IP) that echoes the body it got. */
async function echoServer(): Promise<number> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => res.end(`got ${Buffer.concat(chunks).toString()}`));
  });
  server.listen(0, "127.0.0.2");
  await once(server, "listening");
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

describe("loopback forward", () => {
  it("is needed only for a listener that 127.0.0.1 does not already reach, and not on the local platform's 127.x pod IPs", () => {
    expect(needsLoopbackForward("10.244.0.7")).toBe(true);
    expect(needsLoopbackForward("fd00::7")).toBe(true);
    for (const host of ["0.0.0.0", "::", "", "localhost", "127.0.0.1", "127.20.0.3"])
      expect(needsLoopbackForward(host), host).toBe(false);
  });

  it("carries requests on a kept-alive connection to the listener, unchanged, both ways", async () => {
    const port = await echoServer();
    const forward = await startLoopbackForward({ host: "127.0.0.2", port }, logger, "127.0.0.3");
    expect(forward).toBeDefined();
    closers.push(() => forward!.close());
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`http://127.0.0.3:${port}/`, { method: "POST", body: `hello ${i}` });
      expect(await r.text()).toBe(`got hello ${i}`);
    }
  });

  it("is skipped, not fatal, when its port is taken", async () => {
    const port = await echoServer();
    const first = await startLoopbackForward({ host: "127.0.0.2", port }, logger, "127.0.0.4");
    closers.push(() => first!.close());
    expect(await startLoopbackForward({ host: "127.0.0.2", port }, logger, "127.0.0.4")).toBeUndefined();
  });

  it("close() stops accepting and cuts what it forwards", async () => {
    const port = await echoServer();
    const forward = await startLoopbackForward({ host: "127.0.0.2", port }, logger, "127.0.0.5");
    await forward!.close();
    await expect(fetch(`http://127.0.0.5:${port}/`)).rejects.toThrow();
  });
});
