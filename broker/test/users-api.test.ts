// The Users API against a real broker process (--auth on, file metastore):
// every route and rule (admin only, no escalation, only root grants admin,
// users-file users read-only, self-service passwords), topic ownership,
// restart persistence of the store (and the hash-only format on disk), the
// login throttle for API users, and hostile bodies and names.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicHeader } from "../src/auth/credentials.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

let narad: RunningNarad;
let dir: string;
let dataDir: string;
let authFile: string;

const fileUsers = {
  users: [
    { name: "admin", password: "root-pw" },
    { name: "ops", password: "ops-pw", grants: [{ action: "admin", topics: "*" }] },
    { name: "alice", password: "alice-pw", grants: [{ action: "produce", topics: "orders-*" }] },
  ],
};

async function start(): Promise<void> {
  narad = await startNarad({
    dataDir,
    args: ["--auth", "on", "--auth-file", authFile, "--login-free-attempts", "3"],
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "narad-users-"));
  dataDir = join(dir, "data");
  authFile = join(dir, "users.json");
  writeFileSync(authFile, JSON.stringify(fileUsers));
  await start();
}, 120_000);

afterAll(async () => {
  await narad?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, auth?: string, body?: string | object) {
  const headers: Record<string, string> = {};
  if (auth !== undefined) headers.authorization = auth;
  if (typeof body === "object") headers["content-type"] = "application/json";
  const res = await fetch(`${narad.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === "object" ? JSON.stringify(body) : body }),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

const root = basicHeader("admin", "root-pw");
const ops = basicHeader("ops", "ops-pw");
const alice = basicHeader("alice", "alice-pw");

describe("the Users API", () => {
  it("an admin creates a scoped user who can then authenticate and use exactly its grants", async () => {
    const created = await call("POST", "/v1/users", ops, {
      username: "producer",
      password: "prod-pw",
      grants: [{ action: "produce", patterns: ["orders-*"] }],
    });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({
      username: "producer",
      grants: [{ action: "produce", patterns: ["orders-*"] }],
      source: "api",
    });
    expect(created.text).not.toMatch(/prod-pw|scrypt/);
    const producer = basicHeader("producer", "prod-pw");
    expect((await call("POST", "/v1/topics", root, { name: "orders-eu", partitions: 1 })).status).toBe(201);
    expect((await call("POST", "/v1/topics/orders-eu/produce?key=k", producer, "x")).status).toBe(202);
    expect((await call("GET", "/v1/topics/orders-eu/consume", producer)).status).toBe(403);
    expect((await call("GET", "/v1/topics", basicHeader("producer", "wrong"))).status).toBe(401);
    // A second create of the name: 409; a users-file name: 409 user_read_only.
    const again = await call("POST", "/v1/users", ops, { username: "producer", password: "p" });
    expect([again.status, again.json().code]).toEqual([409, "user_exists"]);
    const clash = await call("POST", "/v1/users", ops, { username: "alice", password: "p" });
    expect([clash.status, clash.json().code]).toEqual([409, "user_read_only"]);
  });

  it("lists and describes users of both sources; non-admins get 403", async () => {
    const list = await call("GET", "/v1/users", ops);
    expect(list.status).toBe(200);
    const users = JSON.parse(list.text) as Array<Record<string, unknown>>;
    expect(users.map((u) => `${u.username}:${u.source}`)).toEqual(
      expect.arrayContaining(["admin:file", "alice:file", "ops:file", "producer:api"]),
    );
    expect(users.find((u) => u.username === "admin")?.root).toBe(true);
    expect(list.text).not.toMatch(/pw|scrypt|password/);
    expect((await call("GET", "/v1/users/producer", root)).json().username).toBe("producer");
    const ghost = await call("GET", "/v1/users/ghost", root);
    expect([ghost.status, ghost.json().code]).toEqual([404, "user_not_found"]);
    for (const [m, p] of [
      ["GET", "/v1/users"],
      ["GET", "/v1/users/producer"],
      ["DELETE", "/v1/users/producer"],
    ] as const) {
      const r = await call(m, p, alice);
      expect([r.status, r.json().code]).toEqual([403, "forbidden"]);
    }
    expect((await call("GET", "/v1/users")).status).toBe(401);
  });

  it("escalation: only root grants admin; nobody grants what they lack; own and root grants are fixed", async () => {
    const adminGrant = { username: "evil", password: "p", grants: [{ action: "admin" }] };
    const byOps = await call("POST", "/v1/users", ops, adminGrant);
    expect([byOps.status, byOps.json().code]).toEqual([403, "privilege_escalation"]);
    expect((await call("POST", "/v1/users", alice, adminGrant)).status).toBe(403);
    expect((await call("POST", "/v1/users", root, { ...adminGrant, username: "deputy" })).status).toBe(201);
    const deputy = basicHeader("deputy", "p");
    // A non-root admin can neither grant admin nor change its own grants, nor root's.
    const up = await call("PUT", "/v1/users/producer/grants", deputy, { grants: [{ action: "admin" }] });
    expect(up.json().code).toBe("privilege_escalation");
    const own = await call("PUT", "/v1/users/deputy/grants", deputy, { grants: [] });
    expect([own.status, own.json().error]).toEqual([403, "cannot modify your own grants"]);
    expect((await call("PUT", "/v1/users/admin/grants", deputy, { grants: [] })).status).toBe(403);
    const fileUser = await call("PUT", "/v1/users/alice/grants", root, { grants: [] });
    expect([fileUser.status, fileUser.json().code]).toEqual([409, "user_read_only"]);
    // Creating "admin" (which would be root) is refused even to root.
    expect((await call("POST", "/v1/users", root, { username: "admin", password: "p" })).status).toBe(403);
    // Replacing grants (PUT and POST) works within the rules.
    const put = await call("PUT", "/v1/users/producer/grants", deputy, {
      grants: [{ action: "consume", patterns: ["orders-*"] }],
    });
    expect([put.status, put.json().grants]).toEqual([200, [{ action: "consume", patterns: ["orders-*"] }]]);
    const post = await call("POST", "/v1/users/producer/grants", ops, {
      grants: [{ action: "produce", patterns: ["orders-*", "audit"] }],
    });
    expect(post.status).toBe(200);
    expect((await call("PUT", "/v1/users/ghost/grants", ops, { grants: [] })).status).toBe(404);
  });

  it("passwords: one's own with the current one, an admin resets any but root's; the old one stops working", async () => {
    const producer = basicHeader("producer", "prod-pw");
    const wrong = await call("PUT", "/v1/users/producer/password", producer, {
      current_password: "nope",
      new_password: "new-pw",
    });
    expect([wrong.status, wrong.json().error]).toEqual([403, "current password is incorrect"]);
    expect(
      (
        await call("PUT", "/v1/users/producer/password", producer, {
          current_password: "prod-pw",
          new_password: "new-pw",
        })
      ).status,
    ).toBe(204);
    expect((await call("GET", "/v1/topics", producer)).status).toBe(401);
    expect((await call("GET", "/v1/topics", basicHeader("producer", "new-pw"))).status).toBe(200);
    // Someone else's: 403 for a non-admin; an admin resets it without the current one.
    expect(
      (
        await call("PUT", "/v1/users/deputy/password", basicHeader("producer", "new-pw"), {
          new_password: "x",
        })
      ).status,
    ).toBe(403);
    expect((await call("PUT", "/v1/users/producer/password", ops, { new_password: "reset-pw" })).status).toBe(
      204,
    );
    expect((await call("GET", "/v1/topics", basicHeader("producer", "reset-pw"))).status).toBe(200);
    expect((await call("PUT", "/v1/users/admin/password", ops, { new_password: "x" })).status).toBe(403);
    const own = await call("PUT", "/v1/users/alice/password", alice, {
      current_password: "alice-pw",
      new_password: "x",
    });
    expect([own.status, own.json().code]).toEqual([409, "user_read_only"]);
    expect((await call("PUT", "/v1/users/producer/password", ops, {})).status).toBe(400);
  });

  it("the creator owns a topic: the owner or an admin alters and deletes it, a create grant alone does not", async () => {
    expect(
      (
        await call("POST", "/v1/users", root, {
          username: "maker",
          password: "m",
          grants: [{ action: "create", patterns: ["team-*"] }],
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", "/v1/users", root, {
          username: "maker2",
          password: "m",
          grants: [{ action: "create", patterns: ["team-*"] }],
        })
      ).status,
    ).toBe(201);
    const maker = basicHeader("maker", "m");
    const maker2 = basicHeader("maker2", "m");
    // A client-supplied owner is ignored.
    const t = await call("POST", "/v1/topics", maker, { name: "team-a", partitions: 1, owner: "maker2" });
    expect([t.status, t.json().owner]).toEqual([201, "maker"]);
    expect((await call("GET", "/v1/topics/team-a", maker2)).json().owner).toBe("maker");
    const alter = await call("PATCH", "/v1/topics/team-a", maker2, { retention_ms: 1000 });
    expect([alter.status, alter.json().code]).toEqual([403, "not_topic_owner"]);
    expect((await call("DELETE", "/v1/topics/team-a", maker2)).status).toBe(403);
    expect((await call("PATCH", "/v1/topics/team-a", maker, { retention_ms: 1000 })).status).toBe(200);
    expect((await call("DELETE", "/v1/topics/team-a", maker)).status).toBe(204);
    expect((await call("POST", "/v1/topics", maker2, { name: "team-b", partitions: 1 })).status).toBe(201);
    expect((await call("DELETE", "/v1/topics/team-b", ops)).status).toBe(204);
    // Not found stays 404 for anyone authenticated.
    expect((await call("DELETE", "/v1/topics/team-none", maker)).status).toBe(404);
  });

  it("fan-out links follow ownership: attach needs both topics' owner (or admin), detach either's; a create grant alone does not", async () => {
    for (const u of ["linker", "linker2"])
      expect(
        (
          await call("POST", "/v1/users", root, {
            username: u,
            password: "l",
            grants: [{ action: "create", patterns: ["fo-*"] }],
          })
        ).status,
      ).toBe(201);
    const l1 = basicHeader("linker", "l");
    const l2 = basicHeader("linker2", "l");
    for (const [who, name] of [
      [l1, "fo-p1"],
      [l1, "fo-c1"],
      [l2, "fo-p2"],
      [l2, "fo-c2"],
    ] as const)
      expect((await call("POST", "/v1/topics", who, { name, partitions: 1 })).status).toBe(201);
    const attach = (who: string, p: string, c: string) =>
      call("POST", `/v1/topics/${p}/children`, who, { child: c });
    // Another user's parent, or another user's child: 403 not_topic_owner, nothing linked.
    const r1 = await attach(l2, "fo-p1", "fo-c2");
    expect([r1.status, r1.json().code]).toEqual([403, "not_topic_owner"]);
    const r2 = await attach(l1, "fo-p1", "fo-c2");
    expect([r2.status, r2.json().code]).toEqual([403, "not_topic_owner"]);
    expect((await call("GET", "/v1/topics/fo-c2", l2)).json().role).toBe("standalone");
    // Create-as-child under someone else's parent: 403, no topic left behind.
    const r3 = await call("POST", "/v1/topics", l2, { name: "fo-c3", parent: "fo-p1" });
    expect([r3.status, r3.json().code]).toEqual([403, "not_topic_owner"]);
    expect((await call("GET", "/v1/topics/fo-c3", l2)).status).toBe(404);
    // The owner of both links; an admin links anyone's.
    expect((await attach(l1, "fo-p1", "fo-c1")).status).toBe(200);
    expect((await attach(ops, "fo-p1", "fo-c2")).status).toBe(200);
    expect((await call("POST", "/v1/topics", l1, { name: "fo-c4", parent: "fo-p1" })).status).toBe(201);
    // Detach: a stranger to both is refused; the child's owner may leave, the parent's owner may drop.
    const d1 = await call("DELETE", "/v1/topics/fo-p1/children/fo-c1", l2);
    expect([d1.status, d1.json().code]).toEqual([403, "not_topic_owner"]);
    expect((await call("DELETE", "/v1/topics/fo-p1/children/fo-c2", l2)).status).toBe(204);
    expect((await call("DELETE", "/v1/topics/fo-p1/children/fo-c1", l1)).status).toBe(204);
    // Unknown topics stay 404 for anyone authenticated.
    expect((await attach(l1, "fo-none", "fo-c1")).status).toBe(404);
  });

  it("delete: 204; not root, not oneself, not a users-file user", async () => {
    expect((await call("DELETE", "/v1/users/admin", ops)).status).toBe(403);
    expect((await call("DELETE", "/v1/users/deputy", basicHeader("deputy", "p"))).status).toBe(403);
    const fileUser = await call("DELETE", "/v1/users/alice", ops);
    expect([fileUser.status, fileUser.json().code]).toEqual([409, "user_read_only"]);
    expect((await call("DELETE", "/v1/users/maker2", ops)).status).toBe(204);
    expect((await call("GET", "/v1/topics", basicHeader("maker2", "m"))).status).toBe(401);
    expect((await call("DELETE", "/v1/users/maker2", ops)).status).toBe(404);
  });

  it("hostile input: huge bodies, bad names and grants, non-JSON", async () => {
    const huge = await call("POST", "/v1/users", ops, { username: "big", password: "x".repeat(100_000) });
    expect(huge.status).toBe(413);
    const longPw = await call("POST", "/v1/users", ops, { username: "big", password: "x".repeat(2000) });
    expect([longPw.status, longPw.json().code]).toEqual([400, "bad_request"]);
    for (const username of ["", "a b", "../etc", "x".repeat(65), "a:b", 7, null])
      expect(
        (await call("POST", "/v1/users", ops, { username, password: "p" })).status,
        String(username),
      ).toBe(400);
    for (const grants of [
      [{ action: "root", patterns: ["*"] }],
      [{ action: "produce", patterns: ["a/b"] }],
      [{ action: "produce" }],
      "all",
    ])
      expect((await call("POST", "/v1/users", ops, { username: "g", password: "p", grants })).status).toBe(
        400,
      );
    expect((await call("POST", "/v1/users", ops, "{not json")).status).toBe(400);
    expect((await call("POST", "/v1/users", ops, [])).status).toBe(400);
    expect((await call("POST", "/v1/users", ops, { username: "g", password: "p", extra: 1 })).status).toBe(
      400,
    );
    expect((await call("POST", "/v1/users", ops, { username: "g" })).status).toBe(400);
    expect((await call("GET", "/v1/users/g", ops)).status).toBe(404);
  });

  it("concurrent creates of one name: exactly one 201, the rest 409 user_exists", async () => {
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => call("POST", "/v1/users", ops, { username: "racer", password: "r" })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(answers.filter((a) => a.status === 409).every((a) => a.json().code === "user_exists")).toBe(true);
  });

  it("API users go through the login throttle; unknown names cost a hash (no fast 401)", async () => {
    expect((await call("POST", "/v1/users", ops, { username: "throttled", password: "t" })).status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await call("GET", "/v1/topics", basicHeader("throttled", `bad${i}`))).status);
    expect(statuses).toContain(429);
    // An unknown name takes about as long as a real user's scrypt check.
    const t0 = performance.now();
    expect((await call("GET", "/v1/topics", basicHeader("nobody-here", "x"))).status).toBe(401);
    expect(performance.now() - t0).toBeGreaterThan(5);
  });

  it("the store survives a restart, holds only scrypt hashes, and the users file still wins", async () => {
    const stored = readFileSync(join(dataDir, "metastore", "users.json"), "utf8");
    expect(stored).toMatch(/scrypt\$16384\$8\$1\$/);
    expect(stored).not.toMatch(/reset-pw|"password"/);
    await narad.stop();
    await start();
    expect((await call("GET", "/v1/topics", basicHeader("producer", "reset-pw"))).status).toBe(200);
    expect((await call("GET", "/v1/users/deputy", ops)).json().grants).toEqual([{ action: "admin" }]);
    expect((await call("GET", "/v1/topics/orders-eu", ops)).json().owner).toBe("admin");
    // A users-file entry of the same name takes over (the file is the operator's, authoritative).
    writeFileSync(
      authFile,
      JSON.stringify({ users: [...fileUsers.users, { name: "producer", password: "file-pw" }] }),
    );
    const deadline = Date.now() + 20_000;
    while ((await call("GET", "/v1/topics", basicHeader("producer", "file-pw"))).status !== 200) {
      if (Date.now() > deadline) throw new Error("the users file was not reloaded");
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await call("GET", "/v1/topics", basicHeader("producer", "reset-pw"))).status).toBe(401);
    expect((await call("GET", "/v1/users/producer", ops)).json().source).toBe("file");
    expect((await call("DELETE", "/v1/users/producer", ops)).json().code).toBe("user_read_only");
  }, 120_000);
});
