// Test workload for image `narad.test/echo` (see ../images.ts).
//
// Listens on $POD_IP:${PORT:-8080}.
//   GET /healthz  200 always (liveness)
//   GET /ready    200 if $DATA_DIR/ready exists or READY=1, else 503 (readiness)
//   GET /info     JSON: hostname, pod IP, pid, start counter
//   GET /file?path=/abs/path   the file's contents (to inspect mounted volumes)
//   GET /resolve?name=host     the address dns.lookup returns (pod names via /etc/hosts)
// On every start it increments $DATA_DIR/counter (DATA_DIR defaults to /data,
// usually a PVC mount), so tests can see that data survived a pod replacement.

import dns from "node:dns/promises";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const DEFAULT_PORT = 8080;
const host = process.env["POD_IP"] || "127.0.0.1";
const port = Number(process.env["PORT"] || DEFAULT_PORT);
const dataDir = process.env["DATA_DIR"] || "/data";
const counterFile = path.join(dataDir, "counter");

fs.mkdirSync(dataDir, { recursive: true });
let previous = 0;
try {
  previous = Number.parseInt(fs.readFileSync(counterFile, "utf8"), 10) || 0;
} catch {
  // first start on this volume
}
const counter = previous + 1;
fs.writeFileSync(counterFile, `${counter}\n`);

function ready(): boolean {
  return process.env["READY"] === "1" || fs.existsSync(path.join(dataDir, "ready"));
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  const send = (code: number, body: string, type = "text/plain") => {
    res.writeHead(code, { "content-type": type });
    res.end(body);
  };
  switch (url.pathname) {
    case "/healthz":
      return send(200, "ok\n");
    case "/ready":
      return ready() ? send(200, "ready\n") : send(503, "not ready\n");
    case "/info":
      return send(
        200,
        JSON.stringify({
          hostname: process.env["HOSTNAME"],
          podIP: host,
          pid: process.pid,
          counter,
          dataDir,
        }),
        "application/json",
      );
    case "/file": {
      const p = url.searchParams.get("path") ?? "";
      try {
        return send(200, fs.readFileSync(p, "utf8"));
      } catch (err) {
        return send(404, String(err));
      }
    }
    case "/resolve": {
      dns.lookup(url.searchParams.get("name") ?? "").then(
        (r) => send(200, r.address),
        (err: unknown) => send(404, String(err)),
      );
      return;
    }
    default:
      return send(404, "not found\n");
  }
});

server.listen(port, host, () => {
  console.log(JSON.stringify({ msg: "echo-server listening", host, port, counter }));
});

process.on("SIGTERM", () => {
  console.log(JSON.stringify({ msg: "echo-server got SIGTERM" }));
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
