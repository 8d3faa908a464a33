import { describe, expect, it } from "vitest";
import type { Grant } from "../../../packages/users/src/grants.ts";
import { mergeUsers } from "./api-users-store.ts";
import type { Principal } from "./authenticator.ts";
import {
  covers,
  createRefusal,
  delegationRefusal,
  deleteRefusal,
  grantsRefusal,
  grantsToWire,
  isAdmin,
  linkManageRefusal,
  parseApiGrants,
  passwordProblem,
  passwordRefusal,
  patternCovers,
  readRefusal,
  topicManageRefusal,
} from "./user-rules.ts";
import { parseUsersFile } from "./users-file.ts";

const principal = (name: string, grants: Grant[] = [], root = false): Principal => ({
  name,
  via: "basic",
  root,
  grants,
});
const root = principal("admin", [], true);
const ops = principal("ops", [{ action: "admin", topics: "*" }]);
const scopedAdmin = principal("team-admin", [{ action: "admin", topics: "team-*" }]);
const alice = principal("alice", [
  { action: "produce", topics: "orders-*" },
  { action: "consume", topics: "audit", groups: "billing" },
]);
const api = (name: string) => ({ name, source: "api" as const });
const file = (name: string) => ({ name, source: "file" as const });

describe("parseApiGrants", () => {
  it("reads Narad's {action, patterns} (one grant per pattern) and the users file's {action, topics}", () => {
    expect(
      parseApiGrants([
        { action: "produce", patterns: ["a-*", "b"] },
        { action: "consume", topics: "c", groups: "g*" },
        { action: "admin" },
      ]),
    ).toEqual([
      { action: "produce", topics: "a-*" },
      { action: "produce", topics: "b" },
      { action: "consume", topics: "c", groups: "g*" },
      { action: "admin", topics: "*" },
    ]);
    expect(parseApiGrants(undefined)).toEqual([]);
  });

  it.each([
    [[{ action: "steal", patterns: ["a"] }], /unknown grant action/],
    [[{ action: "produce" }], /at least one topic pattern/],
    [[{ action: "produce", patterns: [""] }], /topic name/],
    [[{ action: "produce", patterns: ["a*b"] }], /topic name/],
    [[{ action: "produce", patterns: ["../x"] }], /topic name/],
    [[{ action: "admin", patterns: ["x"] }], /global/],
    [[{ action: "produce", patterns: ["a"], extra: 1 }], /unknown field/],
    [[{ action: "produce", patterns: "a" }], /must be an array/],
    ["nope", /must be an array/],
    [Array.from({ length: 257 }, () => ({ action: "produce", patterns: ["a"] })), /at most 256/],
    [[{ action: "produce", patterns: Array.from({ length: 300 }, (_, i) => `t${i}`) }], /at most 256/],
  ])("refuses %j", (raw, message) => {
    expect(() => parseApiGrants(raw)).toThrow(message);
  });

  it("shows grants in Narad's shape", () => {
    expect(grantsToWire([{ action: "admin", topics: "*" }, ...alice.grants])).toEqual([
      { action: "admin" },
      { action: "produce", patterns: ["orders-*"] },
      { action: "consume", patterns: ["audit"], groups: "billing" },
    ]);
  });
});

describe("who may grant what", () => {
  it("a pattern covers the names of a narrower one, never a broader one", () => {
    expect(patternCovers("orders-*", "orders-eu")).toBe(true);
    expect(patternCovers("orders-*", "orders-eu-*")).toBe(true);
    expect(patternCovers("orders-*", "orders*")).toBe(false);
    expect(patternCovers("orders-eu", "orders-*")).toBe(false);
    expect(patternCovers("*", "anything*")).toBe(true);
  });

  it("covers: same action, topics and groups at least as broad", () => {
    expect(covers(alice.grants, [{ action: "produce", topics: "orders-eu" }])).toBe(true);
    expect(covers(alice.grants, [{ action: "produce", topics: "payments" }])).toBe(false);
    expect(covers(alice.grants, [{ action: "consume", topics: "orders-eu" }])).toBe(false);
    expect(covers(alice.grants, [{ action: "consume", topics: "audit", groups: "billing" }])).toBe(true);
    // A grant without groups covers every group: more than alice holds.
    expect(covers(alice.grants, [{ action: "consume", topics: "audit" }])).toBe(false);
    expect(covers(scopedAdmin.grants, [{ action: "produce", topics: "team-x" }])).toBe(true);
  });

  it("only root grants admin; admins grant any scoped grant; nobody grants more than they hold", () => {
    const adminGrant: Grant[] = [{ action: "admin", topics: "*" }];
    expect(delegationRefusal(root, adminGrant)).toBeUndefined();
    expect(delegationRefusal(undefined, adminGrant)).toBeUndefined();
    expect(delegationRefusal(ops, adminGrant)?.code).toBe("privilege_escalation");
    expect(delegationRefusal(ops, [{ action: "create", topics: "*" }])).toBeUndefined();
    expect(delegationRefusal(scopedAdmin, [{ action: "admin", topics: "team-a" }])?.code).toBe(
      "privilege_escalation",
    );
    expect(delegationRefusal(scopedAdmin, [{ action: "produce", topics: "other" }])?.message).toBe(
      "cannot grant permissions you do not hold",
    );
    expect(delegationRefusal(alice, [{ action: "produce", topics: "orders-eu" }])).toBeUndefined();
  });

  it("admins: root, the cluster secret, admin on every topic (not a scoped admin)", () => {
    expect([root, ops, undefined].map(isAdmin)).toEqual([true, true, true]);
    expect([scopedAdmin, alice].map(isAdmin)).toEqual([false, false]);
    expect(readRefusal(alice)?.status).toBe(403);
    expect(readRefusal(ops)).toBeUndefined();
  });
});

describe("user management decisions", () => {
  it("create: admin only, a valid name that is not reserved, free, and no escalation", () => {
    expect(createRefusal(alice, "bob", [], undefined)?.message).toBe("admin privileges required");
    expect(createRefusal(ops, "bob", [], undefined)).toBeUndefined();
    expect(createRefusal(ops, "bad name", [], undefined)?.status).toBe(400);
    expect(createRefusal(ops, "x".repeat(65), [], undefined)?.status).toBe(400);
    expect(createRefusal(ops, 7, [], undefined)?.status).toBe(400);
    expect(createRefusal(root, "admin", [], undefined)?.status).toBe(403);
    expect(createRefusal(root, "narad-cluster", [], undefined)?.status).toBe(403);
    expect(createRefusal(ops, "bob", [{ action: "admin", topics: "*" }], undefined)?.code).toBe(
      "privilege_escalation",
    );
    expect(createRefusal(ops, "alice", [], "file")?.code).toBe("user_read_only");
    expect(createRefusal(ops, "bob", [], "api")?.code).toBe("user_exists");
  });

  it("grants: admin only, not one's own, not root's, not a file user's, no escalation", () => {
    expect(grantsRefusal(alice, api("bob"), "bob", [])?.status).toBe(403);
    expect(grantsRefusal(ops, api("ops"), "ops", [])?.message).toBe("cannot modify your own grants");
    expect(grantsRefusal(ops, file("admin"), "admin", [])?.message).toMatch(/immutable/);
    expect(grantsRefusal(ops, file("alice"), "alice", [])?.code).toBe("user_read_only");
    expect(grantsRefusal(ops, undefined, "ghost", [])?.code).toBe("user_not_found");
    expect(grantsRefusal(ops, api("bob"), "bob", [{ action: "admin", topics: "*" }])?.code).toBe(
      "privilege_escalation",
    );
    expect(grantsRefusal(root, api("bob"), "bob", [{ action: "admin", topics: "*" }])).toBeUndefined();
  });

  it("delete: admin only, not root, not oneself, not a file user", () => {
    expect(deleteRefusal(alice, api("bob"), "bob")?.status).toBe(403);
    expect(deleteRefusal(ops, file("admin"), "admin")?.message).toMatch(/root admin cannot be deleted/);
    expect(deleteRefusal(ops, api("ops"), "ops")?.message).toMatch(/own account/);
    expect(deleteRefusal(ops, file("alice"), "alice")?.status).toBe(409);
    expect(deleteRefusal(ops, undefined, "ghost")?.status).toBe(404);
    expect(deleteRefusal(ops, api("bob"), "bob")).toBeUndefined();
  });

  it("password: oneself (proving the current one unless admin) or an admin; root's only by root", () => {
    const bob = principal("bob", [{ action: "produce", topics: "x" }]);
    expect(passwordRefusal(bob, api("bob"), "bob")).toEqual({ needsCurrent: true });
    expect(passwordRefusal(ops, api("bob"), "bob")).toEqual({ needsCurrent: false });
    expect(passwordRefusal(bob, api("carol"), "carol")).toMatchObject({ status: 403 });
    expect(passwordRefusal(ops, file("admin"), "admin")).toMatchObject({ status: 403 });
    expect(passwordRefusal(root, file("admin"), "admin")).toMatchObject({ code: "user_read_only" });
    expect(passwordRefusal(alice, file("alice"), "alice")).toMatchObject({ code: "user_read_only" });
    expect(passwordRefusal(ops, undefined, "ghost")).toMatchObject({ status: 404 });
    // A non-admin probing names learns nothing: 403 before the lookup.
    expect(passwordRefusal(bob, undefined, "ghost")).toMatchObject({ status: 403 });
  });

  it("passwords are non-empty strings of at most 1 KiB", () => {
    expect(passwordProblem("", "password")).toBe("password required");
    expect(passwordProblem(5, "password")).toBe("password required");
    expect(passwordProblem("x".repeat(1025), "password")).toMatch(/longer than 1024/);
    expect(passwordProblem("é".repeat(512), "password")).toBeUndefined();
  });
});

describe("topic ownership", () => {
  it("the owner or an admin alters and deletes; a create grant alone does not", () => {
    const creator = principal("creator", [{ action: "create", topics: "orders-*" }]);
    expect(topicManageRefusal(creator, "orders-eu", "creator")).toBeUndefined();
    expect(topicManageRefusal(creator, "orders-eu", "someone")?.code).toBe("not_topic_owner");
    expect(topicManageRefusal(creator, "orders-eu", undefined)?.status).toBe(403);
    expect(topicManageRefusal(root, "orders-eu", "someone")).toBeUndefined();
    expect(topicManageRefusal(ops, "orders-eu", undefined)).toBeUndefined();
    expect(topicManageRefusal(scopedAdmin, "team-a", "x")).toBeUndefined();
    expect(topicManageRefusal(scopedAdmin, "orders-eu", "x")?.status).toBe(403);
    expect(topicManageRefusal(undefined, "orders-eu", "x")).toBeUndefined();
  });

  it("fan-out: attach needs the parent's and the child's manager, detach either's", () => {
    const bob = principal("bob", [{ action: "create", topics: "*" }]);
    const mine = { name: "p", owner: "bob" };
    const theirs = { name: "c", owner: "carol" };
    expect(linkManageRefusal(bob, "attach", mine, { name: "c", owner: "bob" })).toBeUndefined();
    expect(linkManageRefusal(bob, "attach", mine, theirs)?.code).toBe("not_topic_owner");
    expect(linkManageRefusal(bob, "attach", theirs, mine)?.code).toBe("not_topic_owner");
    // Create-as-child: the child is the caller's own new topic.
    expect(linkManageRefusal(bob, "attach", mine, undefined)).toBeUndefined();
    expect(linkManageRefusal(bob, "attach", theirs, undefined)?.status).toBe(403);
    expect(linkManageRefusal(bob, "detach", mine, theirs)).toBeUndefined();
    expect(linkManageRefusal(bob, "detach", theirs, mine)).toBeUndefined();
    expect(linkManageRefusal(bob, "detach", theirs, { name: "d", owner: "dan" })?.status).toBe(403);
    expect(linkManageRefusal(ops, "attach", theirs, { name: "d", owner: "dan" })).toBeUndefined();
  });
});

describe("mergeUsers", () => {
  it("the users file wins a name clash; tokens come from the file", () => {
    const fromFile = parseUsersFile(
      JSON.stringify({ users: [{ name: "alice", password: "file-pw", tokens: ["t".repeat(16)] }] }),
    );
    const fromApi = parseUsersFile(
      JSON.stringify({
        users: [
          { name: "alice", password: "api-pw", grants: [{ action: "admin", topics: "*" }] },
          { name: "bob", password: "b" },
        ],
      }),
    );
    const merged = mergeUsers(fromFile, fromApi);
    expect([...merged.users.keys()].sort()).toEqual(["alice", "bob"]);
    expect(merged.users.get("alice")?.grants).toEqual([]);
    expect(merged.tokens).toBe(fromFile.tokens);
    expect(mergeUsers(fromFile, undefined)).toBe(fromFile);
  });
});
