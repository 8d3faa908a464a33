// The Users API's store on the kubernetes metastore (one Secret per cluster,
// broker/src/auth/kube-users-store.ts) against a real API server:
//
//   - two stores in this process, each with its own client and the identity
//     of a broker bound to the operator's real broker Role (roleSpec): the
//     Secret the operator would create (apiUsersSecretSpec, owned by the
//     NaradCluster), concurrent writes through both (every change survives),
//     a change seen by the other store within the freshness bound, and the
//     Role letting the store read no other Secret;
//   - a store behind a frozen proxy: within the bound its view serves, past
//     it every decision is a 503 users_unavailable, and it recovers;
//   - two real `narad serve --metastore kubernetes --auth on` processes:
//     create, authenticate, grant, revoke, delete through one broker and seen
//     through the other, creates racing on both brokers, hostile input (JSON
//     4xx, the Secret untouched), and the API server stopped: API users get
//     503 once the bound ran out (users-file users still log in), and come
//     back when it is started again.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1Role,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiUser } from "../../broker/src/auth/api-users-store.ts";
import { basicHeader } from "../../broker/src/auth/credentials.ts";
import { type KubeUsersStore, openKubeUsersStore } from "../../broker/src/auth/kube-users-store.ts";
import { hashPassword } from "../../broker/src/auth/passwords.ts";
import { decodeUsersDocument, usersDocumentKey } from "../../broker/src/auth/users-document.ts";
import { NaradError } from "../../broker/src/errors.ts";
import { startNarad } from "../../broker/test/harness/process.ts";
import { roleSpec } from "../../operator/src/specs/rbac.ts";
import { apiUsersSecretSpec } from "../../operator/src/specs/secrets.ts";
import { resourceNames } from "../../packages/api/src/v1alpha1/names.ts";
import type { MemberStatus, NaradCluster } from "../../packages/api/src/v1alpha1/types.ts";
import {
  type ApiProxy,
  createCluster,
  createNamespace,
  installCrds,
  startFakeOperator,
  startProxy,
  writeKubeconfigVia,
} from "../cluster/fake-operator.ts";
import { type ControlPlane, startControlPlane } from "../platform/control-plane.ts";
import { waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import { freePortPair, type KubeBroker } from "./suite.ts";

const log = stderrLog("users-secret-test");
const quiet = {
  info: () => {},
  warn: (obj: object, msg: string) => log(`warn ${msg} ${JSON.stringify(obj)}`),
};
const CLUSTER = "demo";
const SECRET = resourceNames(CLUSTER).apiUsers;
/** The brokers' default --users-max-staleness-ms and read interval (constants.ts). */
const BOUND_MS = 10_000;
const POLL_MS = 1_000;

let cp: ControlPlane;
let dir: string;
let kc: KubeConfig;
let brokerKubeconfig: string;
const stores: KubeUsersStore[] = [];
const proxies: ApiProxy[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "narad-users-secret-"));
  cp = await startControlPlane({ dir: join(dir, "cp"), log });
  kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  await installCrds(kc);
  // A broker's identity: not system:masters, only what the operator's broker Role grants.
  brokerKubeconfig = await cp.issueKubeconfig({ name: "broker", user: "narad-broker-test" });
}, 1_800_000);

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  await Promise.all(proxies.map((p) => p.close().catch(() => undefined)));
  await cp?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** What the operator does for a cluster with auth on: the Secret (empty, owned) and the broker Role, bound to the test broker. */
async function operatorObjects(ns: string): Promise<void> {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const cluster = (await objects.getNamespacedCustomObject({
    group: "narad.dev",
    version: "v1alpha1",
    namespace: ns,
    plural: "naradclusters",
    name: CLUSTER,
  })) as NaradCluster;
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns,
    body: apiUsersSecretSpec(cluster, SECRET),
  });
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: ns, body: roleSpec(cluster) as V1Role });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: "test-broker" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: resourceNames(CLUSTER).role },
      subjects: [{ kind: "User", name: "narad-broker-test", apiGroup: "rbac.authorization.k8s.io" }],
    },
  });
}

const oneMember: MemberStatus[] = [
  {
    id: "demo-0",
    pod: "demo-0",
    ordinal: 0,
    address: "127.0.0.1:1",
    state: "Active",
    since: new Date().toISOString(),
  },
];

async function namespaceWithCluster(prefix: string, members: MemberStatus[] = oneMember): Promise<string> {
  const ns = await createNamespace(kc, prefix);
  await createCluster(kc, ns, CLUSTER, members, 1);
  await operatorObjects(ns);
  return ns;
}

function storeIn(ns: string, kubeconfigPath = brokerKubeconfig): KubeUsersStore {
  const own = new KubeConfig();
  own.loadFromFile(kubeconfigPath);
  const s = openKubeUsersStore({
    kubeConfig: own,
    namespace: ns,
    name: SECRET,
    maxStalenessMs: BOUND_MS,
    pollMs: POLL_MS,
    requestTimeoutMs: 3_000,
    monoMs: () => performance.now(),
    logger: quiet,
  });
  stores.push(s);
  return s;
}

async function secretIn(ns: string): Promise<{ rv: string; users: Map<string, ApiUser>; text: string }> {
  const s = await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: ns, name: SECRET });
  const text = Buffer.from(s.data?.[usersDocumentKey] ?? "", "base64").toString("utf8");
  return { rv: s.metadata?.resourceVersion ?? "", users: decodeUsersDocument(text), text };
}

const fresh = (s: KubeUsersStore) =>
  waitFor(() => s.staleness() === undefined, { timeoutMs: 20_000, what: "store read the Secret" });

const addUser = (name: string, passwordHash: string) => (current: ReadonlyMap<string, ApiUser>) => {
  const next = new Map(current);
  next.set(name, { name, passwordHash, grants: [], created_at_ms: 1, updated_at_ms: 1 });
  return { next, result: name };
};

describe("the Secret store, two brokers' stores in this process", () => {
  it("concurrent changes through both stores all survive; each sees the other's within the bound", async () => {
    const ns = await namespaceWithCluster("users");
    const a = storeIn(ns);
    const b = storeIn(ns);
    await Promise.all([fresh(a), fresh(b)]);
    expect(a.list()).toEqual([]);
    const hash = await hashPassword("pw", 1024);
    // 30 creates, alternating stores, all at once: many patches lose the resourceVersion race and retry.
    const names = Array.from({ length: 30 }, (_, i) => `u${String(i).padStart(2, "0")}`);
    await Promise.all(names.map((n, i) => (i % 2 === 0 ? a : b).change(addUser(n, hash))));
    const stored = await secretIn(ns);
    expect([...stored.users.keys()].sort()).toEqual(names);
    // Only hashes in the Secret.
    expect(stored.text).not.toContain('"password"');
    for (const s of [a, b])
      await waitFor(() => s.list().length === 30, { timeoutMs: BOUND_MS, what: "both views hold 30" });
    // One change through a, timed until b's view has it.
    const t0 = performance.now();
    await a.change(addUser("late", hash));
    await waitFor(() => b.get("late") !== undefined, { timeoutMs: BOUND_MS, what: "b sees late" });
    const seenMs = performance.now() - t0;
    log(`a change through one store was seen by the other after ${Math.round(seenMs)} ms`);
    expect(seenMs).toBeLessThan(BOUND_MS);
    // A change computed on what the other store just wrote: never over it.
    await Promise.all([
      a.change((cur) => {
        const next = new Map(cur);
        next.delete("u00");
        return { next, result: undefined };
      }),
      b.change((cur) => {
        const next = new Map(cur);
        next.delete("u01");
        return { next, result: undefined };
      }),
    ]);
    const after = await secretIn(ns);
    expect(after.users.has("u00") || after.users.has("u01")).toBe(false);
    expect(after.users.size).toBe(29);
    // The Role lets a broker read this Secret and no other.
    const other = new KubeConfig();
    other.loadFromFile(brokerKubeconfig);
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: `${CLUSTER}-users` }, stringData: { "users.json": "{}" } },
    });
    await expect(
      other.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: ns, name: `${CLUSTER}-users` }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      other.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns }),
    ).rejects.toMatchObject({ code: 403 });
  });

  it("behind a frozen API connection: the view serves within the bound, then 503 users_unavailable, then recovers", async () => {
    const ns = await namespaceWithCluster("users");
    const proxy = await startProxy(cp.ports.apiserver);
    proxies.push(proxy);
    const via = await writeKubeconfigVia(brokerKubeconfig, join(dir, `via-${ns}.json`), proxy.port);
    const s = storeIn(ns, via);
    await fresh(s);
    await s.change(addUser("amy", await hashPassword("pw", 1024)));
    proxy.set("frozen");
    const frozenAt = performance.now();
    // Still within the bound: decisions use the view.
    expect(s.get("amy")?.name).toBe("amy");
    await waitFor(() => s.staleness() !== undefined, { timeoutMs: BOUND_MS + 5_000, what: "stale" });
    const staleAfter = performance.now() - frozenAt;
    log(`frozen API connection: the store refused after ${Math.round(staleAfter)} ms`);
    // The last read started before the freeze; the slack is waitFor's polling, not the store.
    expect(staleAfter).toBeLessThanOrEqual(BOUND_MS + 1_000);
    let thrown: unknown;
    try {
      s.get("amy");
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(NaradError);
    expect((thrown as NaradError).status).toBe(503);
    expect((thrown as NaradError).apiCode).toBe("users_unavailable");
    expect(() => s.db()).toThrow(NaradError);
    // A write cannot happen either (its read times out): 503, nothing changed.
    await expect(s.change(addUser("bob", "x"))).rejects.toMatchObject({ status: 503 });
    proxy.set("open");
    const reopened = performance.now();
    await fresh(s);
    log(`recovered ${Math.round(performance.now() - reopened)} ms after the connection reopened`);
    expect(s.get("amy")?.name).toBe("amy");
    expect((await secretIn(ns)).users.has("bob")).toBe(false);
  });
});

// ------------------------------------------------------------------ real brokers

const IDS = ["demo-0", "demo-1"] as const;

type Broker = KubeBroker;

describe("two narad processes on the kubernetes metastore, auth on", () => {
  const brokers: Broker[] = [];
  let ns: string;
  let stopOperator: (() => Promise<void>) | undefined;
  const root = basicHeader("admin", "root-pw");
  const ops = basicHeader("ops", "ops-pw");

  const call = async (b: Broker, method: string, path: string, auth?: string, body?: string | object) => {
    const headers: Record<string, string> = {};
    if (auth !== undefined) headers.authorization = auth;
    if (typeof body === "object") headers["content-type"] = "application/json";
    const res = await fetch(`${b.url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: typeof body === "object" ? JSON.stringify(body) : body }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
  };

  beforeAll(async () => {
    for (const [ordinal, id] of IDS.entries()) {
      const httpPort = await freePortPair();
      brokers.push({
        id,
        ordinal,
        httpPort,
        url: `http://127.0.0.1:${httpPort}`,
        dataDir: join(dir, id),
        proc: undefined,
      });
    }
    const members: MemberStatus[] = brokers.map((b) => ({
      id: b.id,
      pod: b.id,
      ordinal: b.ordinal,
      address: `127.0.0.1:${b.httpPort}`,
      state: "Active",
      since: new Date().toISOString(),
    }));
    ns = await namespaceWithCluster("brokers", members);
    stopOperator = startFakeOperator(kc, ns, CLUSTER, IDS, { log });
    const authFile = join(dir, "users-file.json");
    await writeFile(
      authFile,
      JSON.stringify({
        users: [
          { name: "admin", password: "root-pw" },
          { name: "ops", password: "ops-pw", grants: [{ action: "admin", topics: "*" }] },
        ],
      }),
    );
    await Promise.all(
      brokers.map(async (b) => {
        b.proc = await startNarad({
          port: b.httpPort,
          dataDir: b.dataDir,
          logLevel: process.env.NARAD_TEST_LOG ?? "error",
          args: [
            "--metastore",
            "kubernetes",
            "--cluster-name",
            CLUSTER,
            "--namespace",
            ns,
            "--node-id",
            b.id,
            "--cluster-addr",
            `127.0.0.1:${b.httpPort + 1}`,
            // Single-copy topics: the fake operator places no replicated records.
            ...["--replication", "off"],
            "--auth",
            "on",
            "--auth-file",
            authFile,
          ],
          // The broker identity (the operator's Role), not the admin.
          env: { KUBECONFIG: brokerKubeconfig, KUBERNETES_SERVICE_HOST: "" },
        });
      }),
    );
    const r = await call(brokers[0]!, "POST", "/v1/topics", root, { name: "orders", partitions: 2 });
    expect(r.status, r.text).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await cp?.startApiserver().catch(() => undefined);
    await Promise.all(brokers.map((b) => b.proc?.stop().catch(() => undefined)));
    await stopOperator?.();
  });

  /** Polls `b` until the request answers `status`; returns how long that took (ms). */
  const until = async (
    b: Broker,
    status: number | ((s: number) => boolean),
    method: string,
    path: string,
    auth: string,
  ) => {
    const t0 = performance.now();
    const ok = typeof status === "number" ? (s: number) => s === status : status;
    await waitFor(
      async () => {
        const r = await call(b, method, path, auth, method === "POST" ? "x" : undefined);
        return ok(r.status);
      },
      { timeoutMs: BOUND_MS + 10_000, what: `${method} ${path} → ${String(status)} at ${b.id}` },
    );
    return performance.now() - t0;
  };

  it("create through one broker, log in through the other; grant, revoke, password, delete, each seen there within the bound", async () => {
    const [b0, b1] = [brokers[0]!, brokers[1]!];
    const created = await call(b0, "POST", "/v1/users", ops, {
      username: "alice",
      password: "alice-pw",
      grants: [{ action: "produce", patterns: ["orders"] }],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json()).toMatchObject({ username: "alice", source: "api" });
    const alice = basicHeader("alice", "alice-pw");
    // Seen at once by the broker that wrote it.
    expect((await call(b0, "POST", "/v1/topics/orders/produce?key=k", alice, "x")).status).toBe(202);
    const seen = await until(b1, 202, "POST", "/v1/topics/orders/produce?key=k", alice);
    log(`a user created through demo-0 logged in through demo-1 after ${Math.round(seen)} ms`);
    expect(seen).toBeLessThan(BOUND_MS);
    // The Secret holds the hash only.
    const stored = await secretIn(ns);
    expect(stored.text).toMatch(/scrypt\$16384\$8\$1\$/);
    expect(stored.text).not.toContain("alice-pw");

    // Grant consume through demo-1, used through demo-0.
    const granted = await call(b1, "PUT", "/v1/users/alice/grants", ops, {
      grants: [
        { action: "produce", patterns: ["orders"] },
        { action: "consume", patterns: ["orders"] },
      ],
    });
    expect(granted.status, granted.text).toBe(200);
    await until(
      b0,
      (st) => st !== 403 && st !== 401,
      "GET",
      "/v1/topics/orders/consume?group=g&wait=0",
      alice,
    );
    // Revoke produce through demo-0: refused through demo-1 within the bound.
    const revoked = await call(b0, "PUT", "/v1/users/alice/grants", ops, {
      grants: [{ action: "consume", patterns: ["orders"] }],
    });
    expect(revoked.status).toBe(200);
    const revokeSeen = await until(b1, 403, "POST", "/v1/topics/orders/produce?key=k", alice);
    log(`a revoke through demo-0 applied at demo-1 after ${Math.round(revokeSeen)} ms`);
    // Password changed by alice through demo-1: the old one stops working on demo-0.
    const pw = await call(b1, "PUT", "/v1/users/alice/password", alice, {
      current_password: "alice-pw",
      new_password: "alice-pw2",
    });
    expect(pw.status, pw.text).toBe(204);
    await until(b0, 401, "GET", "/v1/topics", alice);
    expect((await call(b0, "GET", "/v1/topics", basicHeader("alice", "alice-pw2"))).status).toBe(200);
    // Deleted through demo-1: gone at demo-0.
    expect((await call(b1, "DELETE", "/v1/users/alice", ops)).status).toBe(204);
    await until(b0, 401, "GET", "/v1/topics", basicHeader("alice", "alice-pw2"));
    expect((await call(b0, "GET", "/v1/users/alice", ops)).status).toBe(404);
  });

  it("creates racing through both brokers: every distinct name survives, one name is created once", async () => {
    const [b0, b1] = [brokers[0]!, brokers[1]!];
    const names = Array.from({ length: 16 }, (_, i) => `racer-${i}`);
    const answers = await Promise.all(
      names.map((n, i) =>
        call(i % 2 === 0 ? b0 : b1, "POST", "/v1/users", ops, { username: n, password: "p" }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(names.map(() => 201));
    const stored = await secretIn(ns);
    for (const n of names) expect(stored.users.has(n), n).toBe(true);
    const same = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(i % 2 === 0 ? b0 : b1, "POST", "/v1/users", ops, { username: "only-once", password: "p" }),
      ),
    );
    expect(same.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect(same.filter((a) => a.status === 409).every((a) => a.json().code === "user_exists")).toBe(true);
    for (const b of brokers)
      await waitFor(
        async () => {
          const list = await call(b, "GET", "/v1/users", ops);
          const got = (JSON.parse(list.text) as Array<{ username: string }>).map((u) => u.username);
          return names.every((n) => got.includes(n)) && got.includes("only-once");
        },
        { timeoutMs: BOUND_MS, what: `all racers listed at ${b.id}` },
      );
  });

  it("hostile input: JSON 4xx, and the Secret is not written", async () => {
    const b = brokers[1]!;
    const before = await secretIn(ns);
    const cases: Array<[string, string, string | object, number]> = [
      ["POST", "/v1/users", { username: "big", password: "x".repeat(100_000) }, 413],
      ["POST", "/v1/users", { username: "big", password: "x".repeat(2000) }, 400],
      ["POST", "/v1/users", { username: "a b", password: "p" }, 400],
      ["POST", "/v1/users", { username: "../etc", password: "p" }, 400],
      ["POST", "/v1/users", { username: "a:b", password: "p" }, 400],
      ["POST", "/v1/users", { username: "x".repeat(65), password: "p" }, 400],
      ["POST", "/v1/users", { username: 7, password: "p" }, 400],
      ["POST", "/v1/users", { username: "g", password: 123 }, 400],
      ["POST", "/v1/users", { username: "g", password: "p", grants: "all" }, 400],
      [
        "POST",
        "/v1/users",
        { username: "g", password: "p", grants: [{ action: "root", patterns: ["*"] }] },
        400,
      ],
      ["POST", "/v1/users", { username: "g", password: "p", extra: 1 }, 400],
      ["POST", "/v1/users", "{not json", 400],
      ["POST", "/v1/users", [], 400],
      ["POST", "/v1/users", { username: "admin", password: "p" }, 403],
      ["POST", "/v1/users", { username: "ops", password: "p" }, 409],
      ["PUT", "/v1/users/racer-0/grants", { grants: [{ action: "produce" }] }, 400],
      ["PUT", "/v1/users/racer-0/grants", { grants: [{ action: "admin", patterns: ["*"] }] }, 400],
      // ops is an admin but not root: granting admin is escalation.
      ["PUT", "/v1/users/racer-0/grants", { grants: [{ action: "admin" }] }, 403],
      ["PUT", "/v1/users/nobody/grants", { grants: [] }, 404],
      ["PUT", "/v1/users/racer-0/password", { new_password: 5 }, 400],
      ["DELETE", "/v1/users/nobody", {}, 404],
    ];
    for (const [method, path, body, status] of cases) {
      const r = await call(b, method, path, ops, typeof body === "string" ? body : body);
      const label = `${method} ${path} ${JSON.stringify(body).slice(0, 60)}`;
      expect(r.status, `${label}: ${r.text}`).toBe(status);
      expect(typeof r.json().code, label).toBe("string");
    }
    const after = await secretIn(ns);
    expect(after.rv).toBe(before.rv);
    expect(after.text).toBe(before.text);
  });

  it("the API server stopped: API users get 503 users_unavailable once the bound ran out, users-file users still log in; back when it returns", async () => {
    const [b0, b1] = [brokers[0]!, brokers[1]!];
    expect((await call(b0, "POST", "/v1/users", ops, { username: "bob", password: "bob-pw" })).status).toBe(
      201,
    );
    const bob = basicHeader("bob", "bob-pw");
    for (const b of brokers) await until(b, 200, "GET", "/v1/topics", bob);
    const stopCalled = performance.now();
    await cp.stopApiserver();
    // kube-apiserver shuts down gracefully: it stops answering some time before it exits.
    const stoppedAt = performance.now();
    log(`kube-apiserver took ${Math.round(stoppedAt - stopCalled)} ms to exit`);
    try {
      // A write needs the API server: refused at once, as JSON.
      const w = await call(b1, "POST", "/v1/users", ops, { username: "carol", password: "p" });
      expect([w.status, w.json().code]).toEqual([503, "users_unavailable"]);
      for (const b of brokers) {
        await waitFor(
          async () => {
            const r = await call(b, "GET", "/v1/topics", bob);
            if (r.status === 200) return false;
            expect([r.status, r.json().code], r.text).toEqual([503, "users_unavailable"]);
            return true;
          },
          { timeoutMs: BOUND_MS + 10_000, what: `bob refused at ${b.id}` },
        );
        const after = performance.now() - stoppedAt;
        log(
          `API server stopped: bob refused at ${b.id} ${Math.round(after)} ms after it exited, ${Math.round(performance.now() - stopCalled)} ms after the stop began`,
        );
        // Within the bound plus one read interval and a request's deadline of when the last read started.
        expect(after).toBeLessThan(BOUND_MS + POLL_MS + 3_000);
        // Users-file users are not decided by the Secret: authenticated (whatever the route answers next).
        const opsTopics = await call(b, "GET", "/v1/topics", ops);
        expect(opsTopics.status, opsTopics.text).not.toBe(401);
        expect(opsTopics.text).not.toContain("users_unavailable");
        // The Users API itself needs the Secret.
        const list = await call(b, "GET", "/v1/users", ops);
        expect([list.status, list.json().code]).toEqual([503, "users_unavailable"]);
        expect((await call(b, "GET", "/v1/topics", basicHeader("ops", "wrong"))).status).toBe(401);
      }
    } finally {
      await cp.startApiserver();
    }
    const restarted = performance.now();
    for (const b of brokers) await until(b, 200, "GET", "/v1/topics", bob);
    log(
      `API server back: bob logged in again ${Math.round(performance.now() - restarted)} ms after it was ready`,
    );
    expect((await call(b1, "POST", "/v1/users", ops, { username: "carol", password: "p" })).status).toBe(201);
  }, 240_000);
});
