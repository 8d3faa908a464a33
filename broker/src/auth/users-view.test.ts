import { describe, expect, it } from "vitest";
import type { ApiUser } from "./api-users-store.ts";
import {
  decodeUsersDocument,
  emptyUsersDocument,
  encodeUsersDocument,
  UsersDocumentError,
} from "./users-document.ts";
import {
  afterPatchFailure,
  failed,
  freshness,
  initialView,
  observed,
  type SecretContent,
} from "./users-view.ts";

// A valid scrypt hash shape (the parser checks the parameters, not the key).
const hash = `scrypt$16384$8$1$${Buffer.alloc(16, 1).toString("base64")}$${Buffer.alloc(32, 2).toString("base64")}`;

const user = (name: string, extra: Partial<ApiUser> = {}): ApiUser => ({
  name,
  passwordHash: hash,
  grants: [{ action: "produce", topics: "orders-*" }],
  created_at_ms: 1,
  updated_at_ms: 2,
  ...extra,
});

describe("the users document", () => {
  it("round-trips, sorted by name, so equal sets encode to equal text", () => {
    const a = new Map([
      ["zed", user("zed")],
      ["amy", user("amy", { grants: [] })],
    ]);
    const b = new Map([...a].reverse());
    const text = encodeUsersDocument(a);
    expect(encodeUsersDocument(b)).toBe(text);
    const back = decodeUsersDocument(text);
    expect([...back.keys()]).toEqual(["amy", "zed"]);
    expect(back.get("zed")).toEqual(user("zed"));
    expect(decodeUsersDocument(emptyUsersDocument()).size).toBe(0);
    // The operator's initial document, with its trailing newline.
    expect(decodeUsersDocument('{"version":1,"users":[]}\n').size).toBe(0);
  });

  it("holds hashes only: a plaintext password, a bad hash or grant, any unknown field refuses the whole document", () => {
    const good = { version: 1, users: [user("amy")] };
    const bad: Array<[string, unknown]> = [
      ["plaintext", { version: 1, users: [{ ...user("amy"), password: "secret" }] }],
      ["not a hash", { version: 1, users: [user("amy", { passwordHash: "md5$abc" })] }],
      ["huge N", { version: 1, users: [user("amy", { passwordHash: hash.replace("16384", "4194304") })] }],
      ["bad grant", { version: 1, users: [{ ...user("amy"), grants: [{ action: "root", topics: "*" }] }] }],
      ["grants type", { version: 1, users: [{ ...user("amy"), grants: "all" }] }],
      ["unknown user field", { version: 1, users: [{ ...user("amy"), tokens: ["x".repeat(20)] }] }],
      ["unknown top field", { ...good, extra: 1 }],
      ["version", { version: 2, users: [] }],
      ["duplicate", { version: 1, users: [user("amy"), user("amy")] }],
      ["bad name", { version: 1, users: [user("a b")] }],
      ["colon name", { version: 1, users: [user("a:b")] }],
      ["name type", { version: 1, users: [{ ...user("amy"), name: 7 }] }],
      ["timestamp", { version: 1, users: [{ ...user("amy"), created_at_ms: -1 }] }],
      ["users type", { version: 1, users: {} }],
      ["array", []],
    ];
    expect(decodeUsersDocument(JSON.stringify(good)).size).toBe(1);
    for (const [what, doc] of bad)
      expect(() => decodeUsersDocument(JSON.stringify(doc)), what).toThrow(UsersDocumentError);
    expect(() => decodeUsersDocument("{not json")).toThrow(UsersDocumentError);
    expect(() => decodeUsersDocument(JSON.stringify(good)).get("amy")).not.toThrow();
  });
});

describe("the view's freshness", () => {
  const present = (names: string[], rv = "5"): SecretContent => ({
    kind: "present",
    users: new Map(names.map((n) => [n, user(n)])),
    resourceVersion: rv,
  });
  const what = "the API users Secret ns/demo-api-users";

  it("usable only within the bound of the start of the request that confirmed it", () => {
    const bound = 10_000;
    let v = initialView();
    const never = freshness(v, 0, bound, what);
    expect(never.ok).toBe(false);
    v = observed(v, present(["amy"]), 1_000);
    // The age counts from the request's start, not from when its answer arrived.
    const at = freshness(v, 11_000, bound, what);
    expect(at.ok && at.ageMs).toBe(10_000);
    expect(at.ok && [...at.users.keys()]).toEqual(["amy"]);
    const past = freshness(v, 11_001, bound, what);
    expect(past).toEqual({
      ok: false,
      reason: `${what} was last read 10001 ms ago, more than the 10000 ms bound`,
    });
  });

  it("failed reads keep the content but not its age; the error is in the reason; an answer recovers", () => {
    let v = observed(initialView(), present(["amy"]), 0);
    v = failed(v, "connect ECONNREFUSED 127.0.0.1:6443");
    // Within the bound a failed poll changes nothing for decisions...
    expect(freshness(v, 5_000, 10_000, what).ok).toBe(true);
    // ...past it they fail closed, saying why.
    const f = freshness(v, 10_500, 10_000, what);
    expect(f.ok).toBe(false);
    expect(!f.ok && f.reason).toMatch(/10500 ms ago.*ECONNREFUSED/);
    v = observed(v, present(["amy", "bob"], "9"), 10_400);
    const back = freshness(v, 10_500, 10_000, what);
    expect(back.ok && [...back.users.keys()]).toEqual(["amy", "bob"]);
    // An answer never moves the confirmation back (requests run in order; a later start wins).
    expect(observed(v, present(["amy"]), 3).confirmedAtMs).toBe(10_400);
  });

  it("a missing or unreadable Secret is never read as no users: it fails closed even when just read", () => {
    const missing = freshness(observed(initialView(), { kind: "missing" }, 0), 1, 10_000, what);
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.reason).toMatch(/does not exist/);
    const invalid = freshness(
      observed(initialView(), { kind: "invalid", reason: "not JSON" }, 0),
      1,
      10_000,
      what,
    );
    expect(!invalid.ok && invalid.reason).toMatch(/unreadable: not JSON/);
  });
});

describe("after a failed patch", () => {
  it("only a 409 (another broker's write) is retried, from a fresh read, within the attempts", () => {
    expect(afterPatchFailure(409, 0, 10, "s")).toEqual({ kind: "retry" });
    expect(afterPatchFailure(409, 8, 10, "s")).toEqual({ kind: "retry" });
    const exhausted = afterPatchFailure(409, 9, 10, "s");
    expect(exhausted.kind === "fail" && exhausted.status).toBe(503);
    for (const status of [undefined, 500, 503, 429, 504]) {
      const step = afterPatchFailure(status, 0, 10, "s");
      expect(step.kind === "fail" && step.status, String(status)).toBe(503);
    }
    const gone = afterPatchFailure(404, 0, 10, "s");
    expect(gone.kind === "fail" && gone.message).toMatch(/does not exist/);
    const rbac = afterPatchFailure(403, 0, 10, "s");
    expect(rbac.kind === "fail" && [rbac.status, rbac.message]).toEqual([
      500,
      "s: the Kubernetes API refused the broker (its Role lacks get/patch on this Secret)",
    ]);
  });
});
