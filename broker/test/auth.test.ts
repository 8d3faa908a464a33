// HTTP authentication and RBAC against a real broker process (--auth on):
// open endpoints, 401/403/429 with their headers and JSON bodies, grants per
// action and topic pattern, bearer tokens, the cluster secret as an admin
// bearer, a users file replaced the way Kubernetes updates a Secret volume
// (symlink swap) applied without a restart, a broken file keeping the last
// good users, the generated admin password of a single node, and the
// kubernetes-mode refusal to start without a users file.

import { spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ForbiddenError, NaradClient, UnauthenticatedError } from "../../client/index.ts";
import { basicHeader } from "../src/auth/credentials.ts";
import { PasswordChecker } from "../src/auth/passwords.ts";
import { parseScryptHash } from "../src/auth/users-file.ts";
import { type RunningNarad, repoRoot, startNarad } from "./harness/process.ts";

const token = "svc-token-0123456789abcdef";
const clusterSecret = "cluster-secret-for-the-auth-test";

function users(extra: object[] = []) {
  return {
    users: [
      { name: "admin", password: "root-pw" },
      {
        name: "alice",
        password: "alice-pw",
        grants: [
          { action: "produce", topics: "orders-*" },
          { action: "consume", topics: "audit" },
        ],
      },
      { name: "svc", tokens: [token], grants: [{ action: "create", topics: "svc-*" }] },
      { name: "victim", password: "victim-pw" },
      ...extra,
    ],
  };
}

/** A Secret-volume layout: auth.json → ..data/auth.json, ..data → a versioned dir, swapped atomically. */
class SecretVolume {
  readonly dir: string;
  #version = 0;
  constructor(dir: string) {
    this.dir = dir;
  }
  get path(): string {
    return join(this.dir, "auth.json");
  }
  write(content: string): void {
    const v = `..v${++this.#version}`;
    mkdirSync(join(this.dir, v));
    writeFileSync(join(this.dir, v, "auth.json"), content);
    symlinkSync(v, join(this.dir, "..data_tmp"));
    renameSync(join(this.dir, "..data_tmp"), join(this.dir, "..data"));
    if (this.#version === 1) symlinkSync(join("..data", "auth.json"), this.path);
  }
}

let narad: RunningNarad;
let dir: string;
let volume: SecretVolume;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-auth-"));
  volume = new SecretVolume(join(dir, "secret"));
  mkdirSync(volume.dir);
  volume.write(JSON.stringify(users()));
  writeFileSync(join(dir, "cluster-secret"), `${clusterSecret}\n`);
  narad = await startNarad({
    args: ["--auth", "on", "--auth-file", volume.path, "--cluster-secret-file", join(dir, "cluster-secret")],
  });
}, 120_000);

afterAll(async () => {
  await narad?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function call(
  method: string,
  path: string,
  auth?: string,
  body?: string | object,
): Promise<{ status: number; headers: Headers; json: () => Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (auth !== undefined) headers.authorization = auth;
  if (typeof body === "object") headers["content-type"] = "application/json";
  const res = await fetch(`${narad.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === "object" ? JSON.stringify(body) : body }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    json: () => JSON.parse(text) as Record<string, unknown>,
  };
}

const admin = basicHeader("admin", "root-pw");
const alice = basicHeader("alice", "alice-pw");

describe("HTTP authentication", () => {
  it("health and readiness stay open; metrics (which name topics and groups) need authentication", async () => {
    for (const path of ["/healthz", "/readyz"]) expect((await call("GET", path)).status).toBe(200);
    // Issue #14: --metrics-auth follows --auth.
    expect((await call("GET", "/metrics")).status).toBe(401);
    expect((await call("GET", "/metrics", alice)).status).toBe(200);
  });

  it("no or bad credentials: 401 with WWW-Authenticate and a JSON error", async () => {
    for (const auth of [undefined, basicHeader("alice", "nope"), "Bearer not-a-token-at-all", "Digest x"]) {
      const r = await call("GET", "/v1/topics", auth);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe('Basic realm="narad"');
      expect(typeof r.json().error).toBe("string");
    }
    // Unknown routes need authentication too (a 404 tells strangers nothing).
    expect((await call("GET", "/no/such/route")).status).toBe(401);
  });

  it("5 failed logins per username, then 429 with Retry-After even for the right password", async () => {
    for (let i = 0; i < 5; i++)
      expect((await call("GET", "/v1/topics", basicHeader("victim", "guess"))).status).toBe(401);
    const r = await call("GET", "/v1/topics", basicHeader("victim", "victim-pw"));
    expect(r.status).toBe(429);
    const retryAfter = Number(r.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(12);
    expect(String(r.json().error)).toMatch(/too many failed logins/);
    // Another user is not throttled.
    expect((await call("GET", "/v1/topics", alice)).status).toBe(200);
    const metrics = await (await fetch(`${narad.url}/metrics`, { headers: { authorization: admin } })).text();
    expect(metrics).toMatch(/narad_auth_failures_total\{reason="throttled"\} [1-9]/);
    expect(metrics).toMatch(/narad_auth_failures_total\{reason="bad_credentials"\} [1-9]/);
  });

  it("grants enforce produce, consume, create and admin per topic pattern (403 names action and topic)", async () => {
    for (const name of ["orders-eu", "audit"])
      expect((await call("POST", "/v1/topics", admin, { name, partitions: 1 })).status).toBe(201);

    const denied = await call("POST", "/v1/topics", alice, { name: "orders-us" });
    expect(denied.status).toBe(403);
    expect(denied.json().error).toBe('user "alice" may not create on topic "orders-us"');

    expect((await call("POST", "/v1/topics/orders-eu/produce?key=a", alice, "hello")).status).toBe(202);
    const noProduce = await call("POST", "/v1/topics/audit/produce", alice, "x");
    expect(noProduce.status).toBe(403);
    expect(noProduce.json().error).toMatch(/may not produce on topic "audit"/);
    expect((await call("POST", "/v1/topics/audit/produce?key=a", admin, "entry")).status).toBe(202);

    // consume (and ack) on audit only.
    let got: { status: number; json: () => Record<string, unknown> } | undefined;
    for (let i = 0; i < 50; i++) {
      got = await call("GET", "/v1/topics/audit/consume?wait=2s", alice);
      if (got.status === 200) break;
    }
    expect(got?.status).toBe(200);
    const handle = String(got?.json().receipt_handle);
    expect(
      (await call("POST", `/v1/topics/audit/ack?receipt_handle=${encodeURIComponent(handle)}`, alice)).status,
    ).toBe(204);
    expect((await call("GET", "/v1/topics/orders-eu/consume", alice)).status).toBe(403);
    expect((await call("GET", "/v1/topics/orders-eu/records?partition=0&offset=0", alice)).status).toBe(403);

    // Topic metadata needs only authentication.
    expect((await call("GET", "/v1/topics", alice)).status).toBe(200);
    expect((await call("GET", "/v1/topics/audit", alice)).status).toBe(200);
    // Altering or deleting needs the owner (admin created it) or an admin.
    expect((await call("DELETE", "/v1/topics/audit", alice)).status).toBe(403);
    // The admin API needs admin.
    const adminApi = await call("GET", "/admin/v1/status", alice);
    expect(adminApi.status).toBe(403);
    expect(adminApi.json().error).toBe('user "alice" may not admin on the admin API');
    expect((await call("GET", "/admin/v1/status", admin)).status).toBe(200);
  });

  it("bearer tokens carry their user's grants; the cluster secret is an admin bearer", async () => {
    expect(
      (await call("POST", "/v1/topics", `Bearer ${token}`, { name: "svc-1", partitions: 1 })).status,
    ).toBe(201);
    expect((await call("POST", "/v1/topics", `Bearer ${token}`, { name: "other" })).status).toBe(403);
    expect((await call("GET", "/admin/v1/status", `Bearer ${token}`)).status).toBe(403);
    const status = await call("GET", "/admin/v1/status", `Bearer ${clusterSecret}`);
    expect(status.status).toBe(200);
    expect(typeof status.json()).toBe("object");
  });

  it("a replaced users file (Secret symlink swap) applies without a restart; a broken one keeps the last good", async () => {
    const carol = basicHeader("carol", "carol-pw");
    // Polled with a token: failed Basic logins for carol would be throttled (12 s) while we wait.
    const carolToken = "Bearer carol-token-0123456789";
    expect((await call("GET", "/v1/topics", carolToken)).status).toBe(401);
    const started = Date.now();
    volume.write(
      JSON.stringify(users([{ name: "carol", password: "carol-pw", tokens: ["carol-token-0123456789"] }])),
    );
    let status = 0;
    while (Date.now() - started < 20_000) {
      status = (await call("GET", "/v1/topics", carolToken)).status;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
    const reloadMs = Date.now() - started;
    expect(reloadMs).toBeLessThan(20_000);
    process.stdout.write(`users file reload applied after ${reloadMs} ms\n`);
    expect((await call("GET", "/v1/topics", carol)).status).toBe(200);

    volume.write("{ this is not json");
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await call("GET", "/v1/topics", carol)).status).toBe(200);
    expect((await call("GET", "/v1/topics", admin)).status).toBe(200);
  }, 60_000);
});

/** Runs the narad CLI; contexts live in a temp config dir. */
async function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [join(repoRoot, "broker/src/main.ts"), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      NARAD_URL: "",
      NARAD_TOKEN: "",
      NARAD_USER: "",
      NARAD_PASSWORD: "",
      NARAD_CONFIG_DIR: join(dir, "cli-config"),
      ...env,
    },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  return { code, out, err };
}

describe("client library and CLI credentials", () => {
  it("NaradClient sends Basic or bearer credentials; typed errors for 401 and 403", async () => {
    const c = new NaradClient({
      url: narad.url,
      auth: { username: "alice", password: "alice-pw" },
      retries: 0,
    });
    const none = new NaradClient({ url: narad.url, retries: 0 });
    const svc = new NaradClient({ url: narad.url, auth: { token }, retries: 0 });
    try {
      await c.produce("orders-eu", "from the client", { key: "k" });
      await expect(c.produce("audit", "x")).rejects.toBeInstanceOf(ForbiddenError);
      await expect(none.topics.list()).rejects.toBeInstanceOf(UnauthenticatedError);
      expect((await svc.topics.create("svc-client", { partitions: 1 })).name).toBe("svc-client");
      const producer = c.producer("orders-eu");
      await producer.send("batched", { key: "b" });
      await producer.flush();
      await producer.close();
    } finally {
      await Promise.all([c.close(), none.close(), svc.close()]);
    }
  }, 60_000);

  it("narad CLI: --user/--password, --token, NARAD_TOKEN and a context with credentials", async () => {
    const url = ["--url", narad.url];
    const denied = await cli(["topic", "ls", ...url]);
    expect(denied.code).toBe(1);
    expect(denied.err).toMatch(/authentication required/);
    expect(denied.err).toMatch(/hint: give credentials/);
    expect((await cli(["topic", "ls", ...url, "--user", "admin", "--password", "root-pw"])).code).toBe(0);
    expect(
      (await cli(["pub", "orders-eu", "hi", ...url, "--user", "alice", "--password", "alice-pw"])).code,
    ).toBe(0);
    const forbidden = await cli(["pub", "audit", "hi", ...url, "--user", "alice", "--password", "alice-pw"]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.err).toMatch(/may not produce on topic "audit"/);
    expect((await cli(["topic", "add", "svc-cli", ...url, "--token", token])).code).toBe(0);
    expect((await cli(["topic", "info", "svc-cli", ...url], { NARAD_TOKEN: token })).code).toBe(0);
    expect((await cli(["topic", "ls", ...url, "--user", "alice"])).code).toBe(2);

    const add = await cli(["context", "add", "secure", ...url, "--user", "admin", "--password", "root-pw"]);
    expect(add.code).toBe(0);
    const ls = await cli(["context", "ls"]);
    expect(ls.out).toMatch(/user admin/);
    expect(ls.out).not.toMatch(/root-pw/);
    expect((await cli(["topic", "ls"])).code).toBe(0);
    // The context's credentials are not sent to a broker named with --url.
    expect((await cli(["topic", "ls", ...url])).code).toBe(1);

    // hash-password prints a passwordHash that verifies the password.
    const hashed = await cli(["hash-password", "hunter2-pw"]);
    expect(hashed.code).toBe(0);
    const stored = parseScryptHash(hashed.out.trim());
    const checker = new PasswordChecker({
      concurrency: 1,
      maxQueued: 1,
      cacheMs: 0,
      cacheEntries: 1,
      nowMs: Date.now,
    });
    expect(await checker.verify(stored, "hunter2-pw")).toBe(true);
    expect(await checker.verify(stored, "hunter3-pw")).toBe(false);
  }, 240_000);
});

describe("startup", () => {
  it("a single node with auth on and no users file creates one with a random admin password", async () => {
    const n = await startNarad({ args: ["--auth", "on"] });
    try {
      const file = JSON.parse(readFileSync(join(n.dataDir, "auth.json"), "utf8")) as {
        users: Array<{ name: string; password: string }>;
      };
      expect(file.users).toHaveLength(1);
      expect(file.users[0]?.name).toBe("admin");
      const pw = file.users[0]?.password ?? "";
      expect(pw.length).toBeGreaterThanOrEqual(20);
      expect((await fetch(`${n.url}/v1/topics`)).status).toBe(401);
      const ok = await fetch(`${n.url}/v1/topics`, { headers: { authorization: basicHeader("admin", pw) } });
      expect(ok.status).toBe(200);
    } finally {
      await n.stop();
    }
  }, 120_000);

  it("auth on with the kubernetes metastore and no users file exits 2 with a clear error", async () => {
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, "broker/src/main.ts"),
        "serve",
        "--metastore",
        "kubernetes",
        "--cluster-name",
        "c",
        "--auth",
        "on",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    expect(code).toBe(2);
    expect(stderr).toMatch(/needs --auth-file/);
  }, 60_000);
});
