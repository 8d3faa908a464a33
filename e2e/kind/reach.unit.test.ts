// The reachability probe of netpol.kind.test.ts, run here with this repo's
// Node against 127.0.0.1: an HTTP server, a bare TCP server and a closed port
// must come out as reached, reached and error (a refusal is not a policy
// drop), so the kind suite's "blocked" can only mean a timeout.
import { execFile } from "node:child_process";
import { createServer as createHttp, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTcp } from "node:net";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { classify, parseReach, REACH_SCRIPT } from "./reach.ts";

const servers: Array<{ close(): void }> = [];
const port = (s: { address(): AddressInfo | string | null }) => (s.address() as AddressInfo).port;
let httpPort = 0;
let tcpPort = 0;
let closedPort = 0;

beforeAll(async () => {
  const http: Server = createHttp((_req, res) => res.writeHead(200).end("ok"));
  const tcp = createTcp((sock) => sock.end());
  const closed = createTcp();
  await Promise.all([http, tcp, closed].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))));
  httpPort = port(http);
  tcpPort = port(tcp);
  closedPort = port(closed);
  // Closed again: nothing listens on that port any more.
  await new Promise<void>((r) => closed.close(() => r()));
  servers.push(http, tcp);
});
afterAll(() => {
  for (const s of servers) s.close();
});

describe("reach probe", () => {
  it("reports HTTP status, an open port and a refusal", async () => {
    const targets = [
      { name: "http", host: "127.0.0.1", port: httpPort, http: true },
      { name: "tcp", host: "127.0.0.1", port: tcpPort },
      { name: "closed", host: "127.0.0.1", port: closedPort },
    ];
    // Not spawnSync: the HTTP server answers from this process's event loop.
    const r = await promisify(execFile)(process.execPath, ["-e", REACH_SCRIPT, JSON.stringify(targets)], {
      timeout: 15_000,
    });
    const out = parseReach(r.stdout);
    expect(out).toEqual({ http: "http 200", tcp: "open", closed: "ECONNREFUSED" });
    expect(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, classify(v)]))).toEqual({
      http: "reached",
      tcp: "reached",
      closed: "error",
    });
  });

  it("only a timeout counts as blocked", () => {
    expect(classify("timeout")).toBe("blocked");
    for (const o of ["EHOSTUNREACH", "ENOTFOUND", "ECONNRESET", "http x"]) expect(classify(o)).toBe("error");
  });
});
