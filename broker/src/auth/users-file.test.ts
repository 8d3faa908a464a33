import { describe, expect, it } from "vitest";
import { Authenticator } from "./authenticator.ts";
import { basicHeader, parseAuthorization } from "./credentials.ts";
import { BusyError, hashPassword, PasswordChecker } from "./passwords.ts";
import { LoginThrottle } from "./throttle.ts";
import { parseScryptHash, parseUsersFile, sha256, UsersFileError } from "./users-file.ts";

const token = "tok-0123456789abcdef";

describe("parseUsersFile", () => {
  it("indexes users, password digests and token digests", () => {
    const db = parseUsersFile(
      JSON.stringify({
        users: [
          { name: "admin", password: "pw" },
          { name: "svc", tokens: [token], grants: [{ action: "produce", topics: "orders-*" }] },
        ],
      }),
    );
    expect([...db.users.keys()]).toEqual(["admin", "svc"]);
    expect(db.tokens.get(sha256(token).toString("hex"))).toBe("svc");
    expect(db.users.get("svc")?.grants).toEqual([{ action: "produce", topics: "orders-*" }]);
    expect(db.users.get("admin")?.password).toEqual({ kind: "plain", digest: sha256("pw") });
  });
  it.each([
    ["{", /not JSON/],
    ['{"users": {}}', /must be an array/],
    ['{"users": [], "extra": 1}', /unknown field "extra"/],
    ['{"users": [{"name": "a:b", "password": "x"}]}', /name must be/],
    ['{"users": [{"name": "a"}]}', /needs a password/],
    ['{"users": [{"name": "a", "password": "x"}, {"name": "a", "password": "y"}]}', /duplicate user "a"/],
    ['{"users": [{"name": "a", "password": "x", "passwordHash": "scrypt$"}]}', /not both/],
    ['{"users": [{"name": "a", "passwordHash": "md5$abc"}]}', /passwordHash must look like/],
    [
      '{"users": [{"name": "a", "passwordHash": "scrypt$1048577$8$1$c2FsdHNhbHQ=$a2V5a2V5a2V5a2V5a2V5"}]}',
      /power of two/,
    ],
    ['{"users": [{"name": "a", "tokens": ["short"]}]}', /at least 16/],
    [
      `{"users": [{"name": "a", "tokens": ["${token}"]}, {"name": "b", "tokens": ["${token}"]}]}`,
      /listed twice/,
    ],
    [
      '{"users": [{"name": "a", "password": "x", "grants": [{"action": "delete", "topics": "t"}]}]}',
      /action must be/,
    ],
    [
      '{"users": [{"name": "a", "password": "x", "grants": [{"action": "produce", "topics": "a*b"}]}]}',
      /topics must be/,
    ],
  ])("rejects %s", (text, message) => {
    expect(() => parseUsersFile(text)).toThrow(UsersFileError);
    expect(() => parseUsersFile(text)).toThrow(message);
  });
});

describe("parseAuthorization", () => {
  it("reads Basic and Bearer, and says what is wrong otherwise", () => {
    expect(parseAuthorization(basicHeader("bob", "p:w"))).toEqual({
      kind: "basic",
      user: "bob",
      password: "p:w",
    });
    expect(parseAuthorization(`Bearer ${token}`)).toEqual({ kind: "bearer", token });
    expect(parseAuthorization(undefined)).toEqual({ kind: "none" });
    expect(parseAuthorization("Digest x").kind).toBe("malformed");
    expect(parseAuthorization("Basic !!!").kind).toBe("malformed");
    expect(parseAuthorization(`Basic ${Buffer.from("nocolon").toString("base64")}`).kind).toBe("malformed");
    expect(parseAuthorization("Bearer ").kind).toBe("malformed");
  });
});

describe("Authenticator", () => {
  const setup = async () => {
    const hash = await hashPassword("s3cret", 1024);
    let now = 1_000_000;
    const db = parseUsersFile(
      JSON.stringify({
        users: [
          { name: "admin", password: "root-pw" },
          { name: "hashed", passwordHash: hash, grants: [{ action: "consume", topics: "*" }] },
          { name: "svc", tokens: [token] },
        ],
      }),
    );
    const clusterSecret = "cluster-secret-0123456789";
    const auth = new Authenticator({
      users: () => db,
      clusterSecretDigest: () => sha256(clusterSecret),
      passwords: new PasswordChecker({
        concurrency: 2,
        maxQueued: 8,
        cacheMs: 60_000,
        cacheEntries: 100,
        nowMs: () => now,
      }),
      throttle: new LoginThrottle(),
      nowMs: () => now,
    });
    return { auth, clusterSecret, advance: (ms: number) => (now += ms) };
  };
  it("accepts plaintext and scrypt passwords, tokens and the cluster secret", async () => {
    const { auth, clusterSecret } = await setup();
    const root = await auth.authenticate(basicHeader("admin", "root-pw"));
    expect(root.ok && root.principal).toMatchObject({ name: "admin", root: true, via: "basic" });
    const hashed = await auth.authenticate(basicHeader("hashed", "s3cret"));
    expect(hashed.ok && hashed.principal).toMatchObject({ name: "hashed", root: false });
    const svc = await auth.authenticate(`Bearer ${token}`);
    expect(svc.ok && svc.principal).toMatchObject({ name: "svc", via: "bearer" });
    const cluster = await auth.authenticate(`Bearer ${clusterSecret}`);
    expect(cluster.ok && cluster.principal).toMatchObject({ name: "narad-cluster", root: true });
  });
  it("401 for wrong or missing credentials, 429 after 5 failures of one username", async () => {
    const { auth, advance } = await setup();
    expect(await auth.authenticate(undefined)).toMatchObject({ ok: false, status: 401, reason: "missing" });
    expect(await auth.authenticate("Bearer nope-nope-nope-nope")).toMatchObject({ ok: false, status: 401 });
    for (let i = 0; i < 5; i++)
      expect(await auth.authenticate(basicHeader("hashed", "guess"))).toMatchObject({
        ok: false,
        status: 401,
      });
    // Even the right password waits now: the throttle answers before any check.
    const throttled = await auth.authenticate(basicHeader("hashed", "s3cret"));
    expect(throttled).toMatchObject({ ok: false, status: 429, retryAfterSeconds: 12 });
    // Unknown users are throttled the same way (no hint that they do not exist).
    for (let i = 0; i < 5; i++) await auth.authenticate(basicHeader("ghost", "x"));
    expect(await auth.authenticate(basicHeader("ghost", "x"))).toMatchObject({ status: 429 });
    advance(12_000);
    expect((await auth.authenticate(basicHeader("hashed", "s3cret"))).ok).toBe(true);
  });

  it("clients that logged in before a lockout keep working; new guesses (and the new password after a change) wait", async () => {
    let now = 0;
    let db = parseUsersFile(JSON.stringify({ users: [{ name: "bob", password: "old-pw" }] }));
    const auth = new Authenticator({
      users: () => db,
      clusterSecretDigest: () => undefined,
      passwords: new PasswordChecker({
        concurrency: 1,
        maxQueued: 1,
        cacheMs: 60_000,
        cacheEntries: 10,
        nowMs: () => now,
      }),
      throttle: new LoginThrottle(),
      nowMs: () => now,
    });
    expect((await auth.authenticate(basicHeader("bob", "old-pw"))).ok).toBe(true);
    for (let i = 0; i < 5; i++) await auth.authenticate(basicHeader("bob", `guess-${i}`));
    expect(await auth.authenticate(basicHeader("bob", "guess-5"))).toMatchObject({ status: 429 });
    expect((await auth.authenticate(basicHeader("bob", "old-pw"))).ok).toBe(true);
    // The password changes in the users file: the old one is no longer known-good.
    db = parseUsersFile(JSON.stringify({ users: [{ name: "bob", password: "new-pw" }] }));
    expect(await auth.authenticate(basicHeader("bob", "old-pw"))).toMatchObject({ status: 429 });
    now += 12_000;
    expect((await auth.authenticate(basicHeader("bob", "new-pw"))).ok).toBe(true);
    // Known-good entries expire after a minute.
    for (let i = 0; i < 5; i++) await auth.authenticate(basicHeader("bob", `guess-${i}`));
    now += 61_000;
    expect((await auth.authenticate(basicHeader("bob", "new-pw"))).ok).toBe(true);
  });
});

describe("PasswordChecker", () => {
  it("runs at most `concurrency` scrypt checks, refuses past the queue, shares identical checks", async () => {
    const hash = parseScryptHash(await hashPassword("pw", 16384));
    const pc = new PasswordChecker({
      concurrency: 1,
      maxQueued: 2,
      cacheMs: 60_000,
      cacheEntries: 10,
      nowMs: Date.now,
    });
    // Four different wrong passwords: one runs, two queue, the fourth is refused as busy.
    const results = await Promise.allSettled(["a", "b", "c", "d"].map((p) => pc.verify(hash, p)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected"]);
    expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(BusyError);
    // 50 identical checks at once are one hash (none refused).
    const same = await Promise.all(Array.from({ length: 50 }, () => pc.verify(hash, "pw")));
    expect(same.every((x) => x)).toBe(true);
  });
});
