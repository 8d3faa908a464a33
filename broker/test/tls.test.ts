// HTTPS on the API listener (--tls-dir) against a real broker process, with
// certificates generated at test time by openssl (a throwaway CA and two
// server certificates for 127.0.0.1; no key is committed). The directory has
// the layout of a kubernetes.io/tls Secret volume and is updated the same way
// (symlink swap): the new certificate is served to new connections without
// a restart, and a mismatched pair keeps the previous one.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NaradClient } from "../../client/index.ts";
import { basicHeader } from "../src/auth/credentials.ts";
import { freePort, repoRoot } from "./harness/process.ts";

let dir: string;
let child: ChildProcess | undefined;
let port: number;
let ca: Buffer;
const certs: Record<string, { cert: Buffer; key: Buffer }> = {};

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function issue(cn: string): { cert: Buffer; key: Buffer } {
  openssl(
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${cn}.key`,
    "-out",
    `${cn}.csr`,
    "-subj",
    `/CN=${cn}`,
  );
  openssl(
    "x509",
    "-req",
    "-in",
    `${cn}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${cn}.crt`,
    "-days",
    "1",
    "-extfile",
    "san.ext",
  );
  return {
    cert: readFileSync(join(dir, `${cn}.crt`)),
    key: readFileSync(join(dir, `${cn}.key`)),
  };
}

let version = 0;
/** Writes a new ..vN dir and swaps ..data to it, as the kubelet does for Secret volumes. */
function publish(pair: { cert: Buffer; key: Buffer }): void {
  const vol = join(dir, "tls");
  const v = `..v${++version}`;
  mkdirSync(join(vol, v), { recursive: true });
  writeFileSync(join(vol, v, "tls.crt"), pair.cert);
  writeFileSync(join(vol, v, "tls.key"), pair.key);
  symlinkSync(v, join(vol, "..data_tmp"));
  renameSync(join(vol, "..data_tmp"), join(vol, "..data"));
  if (version === 1) {
    symlinkSync(join("..data", "tls.crt"), join(vol, "tls.crt"));
    symlinkSync(join("..data", "tls.key"), join(vol, "tls.key"));
  }
}

interface HttpsReply {
  status: number;
  body: string;
  /** CN of the certificate the server presented. */
  cn: string;
}

function get(path: string, headers: Record<string, string> = {}): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    // agent: false: a fresh connection (and handshake) per request.
    const req = request({ host: "127.0.0.1", port, path, ca, headers, agent: false }, (res) => {
      const cn = String((res.socket as TLSSocket).getPeerCertificate().subject?.CN ?? "");
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, cn }));
    });
    req.on("error", reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-tls-"));
  writeFileSync(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "1",
    "-subj",
    "/CN=narad-test-ca",
  );
  ca = readFileSync(join(dir, "ca.crt"));
  certs.one = issue("narad-one");
  certs.two = issue("narad-two");
  publish(certs.one);
  writeFileSync(join(dir, "users.json"), JSON.stringify({ users: [{ name: "admin", password: "pw" }] }));
  port = await freePort();
  child = spawn(
    process.execPath,
    [
      join(repoRoot, "broker/src/main.ts"),
      "serve",
      ...["--addr", `127.0.0.1:${port}`, "--cluster-addr", "127.0.0.1:0", "--data-dir", join(dir, "data")],
      ...[
        "--log-level",
        "warn",
        "--tls-dir",
        join(dir, "tls"),
        "--auth",
        "on",
        "--auth-file",
        join(dir, "users.json"),
      ],
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  const deadline = Date.now() + 90_000;
  for (;;) {
    const ok = await get("/readyz").then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`narad exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error("narad not ready over HTTPS");
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("HTTPS listener", () => {
  it("serves HTTPS with the Secret's certificate, with auth on top; plain HTTP gets no API", async () => {
    const health = await get("/healthz");
    expect(health.status).toBe(200);
    expect(health.cn).toBe("narad-one");
    expect((await get("/v1/topics")).status).toBe(401);
    expect((await get("/v1/topics", { authorization: basicHeader("admin", "pw") })).status).toBe(200);
    const plain = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(plain === "refused" || plain === 400).toBe(true);
  });

  it("NaradClient over HTTPS trusts a given CA (tls.ca), and refuses an unknown one", async () => {
    const url = `https://127.0.0.1:${port}`;
    const trusted = new NaradClient({
      url,
      tls: { ca },
      auth: { username: "admin", password: "pw" },
      retries: 0,
    });
    const untrusted = new NaradClient({ url, auth: { username: "admin", password: "pw" }, retries: 0 });
    try {
      await trusted.topics.create("tls-topic", { partitions: 1 });
      await trusted.produce("tls-topic", "over https");
      expect((await trusted.topics.list()).map((t) => t.name)).toContain("tls-topic");
      await expect(untrusted.topics.list()).rejects.toThrow(/certificate/);
    } finally {
      await Promise.all([trusted.close(), untrusted.close()]);
    }
  });

  it("a replaced certificate is served to new connections without a restart; a mismatched pair keeps it", async () => {
    const started = Date.now();
    publish(certs.two!);
    let cn = "";
    while (Date.now() - started < 20_000) {
      cn = (await get("/healthz")).cn;
      if (cn === "narad-two") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(cn).toBe("narad-two");
    process.stdout.write(`new certificate served after ${Date.now() - started} ms\n`);
    const pid = child?.pid;

    publish({ cert: certs.one!.cert, key: certs.two!.key });
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await get("/healthz");
    expect(after.status).toBe(200);
    expect(after.cn).toBe("narad-two");
    expect(child?.pid).toBe(pid);
    expect(child?.exitCode).toBeNull();
  }, 60_000);
});
