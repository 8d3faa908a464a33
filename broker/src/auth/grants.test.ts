import { describe, expect, it } from "vitest";
import { allows, patternMatches } from "../../../packages/users/src/grants.ts";
import { requiredAccess } from "./route-policy.ts";

describe("patternMatches", () => {
  it.each([
    ["orders", "orders", true],
    ["orders", "orders-eu", false],
    ["orders-*", "orders-eu", true],
    ["orders-*", "orders-", true],
    ["orders-*", "order", false],
    ["*", "anything", true],
  ])("%s vs %s → %s", (pattern, topic, want) => {
    expect(patternMatches(pattern, topic)).toBe(want);
  });
});

describe("allows", () => {
  const alice = {
    name: "alice",
    grants: [
      { action: "produce", topics: "orders-*" },
      { action: "consume", topics: "audit" },
    ] as const,
  };
  it("grants an action on matching topics only", () => {
    expect(allows(alice, "produce", "orders-eu")).toBe(true);
    expect(allows(alice, "produce", "audit")).toBe(false);
    expect(allows(alice, "consume", "audit")).toBe(true);
    expect(allows(alice, "consume", "orders-eu")).toBe(false);
    expect(allows(alice, "create", "orders-eu")).toBe(false);
  });
  it("the admin API needs an admin grant on every topic", () => {
    expect(allows(alice, "admin", undefined)).toBe(false);
    expect(allows({ name: "ops", grants: [{ action: "admin", topics: "x-*" }] }, "admin", undefined)).toBe(
      false,
    );
    expect(allows({ name: "ops", grants: [{ action: "admin", topics: "*" }] }, "admin", undefined)).toBe(
      true,
    );
  });
  it("an admin grant implies every action on its topics; the user admin is root", () => {
    const ops = { name: "ops", grants: [{ action: "admin", topics: "x-*" }] as const };
    expect(allows(ops, "produce", "x-1")).toBe(true);
    expect(allows(ops, "produce", "y-1")).toBe(false);
    expect(allows({ name: "admin", grants: [] }, "create", "anything")).toBe(true);
  });
});

describe("requiredAccess", () => {
  it.each([
    ["GET", "/healthz", {}, undefined, { kind: "open" }],
    ["GET", "/metrics", {}, undefined, { kind: "open" }],
    ["HEAD", "/readyz", {}, undefined, { kind: "open" }],
    ["GET", "/v1/topics", {}, undefined, { kind: "authenticated" }],
    ["HEAD", "/v1/topics/:topic", { topic: "a" }, undefined, { kind: "authenticated" }],
    ["GET", undefined, {}, undefined, { kind: "authenticated" }],
    [
      "POST",
      "/v1/topics",
      {},
      { name: "t1" },
      { kind: "action", action: "create", topic: "t1", needsBody: true },
    ],
    ["POST", "/v1/topics", {}, "junk", { kind: "action", action: "create", topic: "", needsBody: true }],
    [
      "POST",
      "/v1/topics/:topic/produce",
      { topic: "a" },
      undefined,
      { kind: "action", action: "produce", topic: "a" },
    ],
    [
      "POST",
      "/v1/topics/:topic/produce-batch",
      { topic: "a" },
      undefined,
      { kind: "action", action: "produce", topic: "a" },
    ],
    [
      "GET",
      "/v1/topics/:topic/consume",
      { topic: "a" },
      undefined,
      { kind: "action", action: "consume", topic: "a", group: "default" },
    ],
    [
      "POST",
      "/v1/topics/:topic/ack",
      { topic: "a" },
      undefined,
      { kind: "action", action: "consume", topic: "a", group: "default" },
    ],
    [
      "GET",
      "/v1/topics/:topic/records",
      { topic: "a" },
      undefined,
      { kind: "action", action: "consume", topic: "a" },
    ],
    // Owner-or-admin: the route decides once it has read the owner.
    ["PATCH", "/v1/topics/:topic", { topic: "a" }, undefined, { kind: "authenticated" }],
    // Owner-or-admin: the route decides once it has read the owner.
    ["DELETE", "/v1/topics/:topic", { topic: "a" }, undefined, { kind: "authenticated" }],
    ["PUT", "/v1/users/:username/password", { username: "u" }, undefined, { kind: "authenticated" }],
    ["GET", "/admin/v1/status", {}, undefined, { kind: "action", action: "admin", topic: undefined }],
    ["POST", "/v1/some/new/route", {}, undefined, { kind: "action", action: "admin", topic: undefined }],
  ])("%s %s", (method, route, params, body, want) => {
    expect(requiredAccess(method, route, params, body)).toEqual(want);
  });
});

describe("group grants", () => {
  const user = {
    name: "team-a",
    grants: [
      { action: "consume" as const, topics: "orders", groups: "team-a-*" },
      { action: "consume" as const, topics: "events" },
    ],
  };
  it("a grant with groups covers only those groups", () => {
    expect(allows(user, "consume", "orders", "team-a-billing")).toBe(true);
    expect(allows(user, "consume", "orders", "team-b-billing")).toBe(false);
    expect(allows(user, "consume", "orders", "default")).toBe(false);
  });
  it("a grant without groups keeps meaning every group", () => {
    expect(allows(user, "consume", "events", "anything")).toBe(true);
  });
  it("an ack is authorised for the group its receipt handle names", () => {
    expect(
      requiredAccess("POST", "/v1/topics/:topic/ack", { topic: "o" }, undefined, {
        receipt_handle: "team-b:0:5:0123456789ab.k3",
      }),
    ).toEqual({ kind: "action", action: "consume", topic: "o", group: "team-b" });
    expect(
      requiredAccess("POST", "/v1/topics/:topic/ack", { topic: "o" }, undefined, {
        receipt_handle: "0:5:0123456789ab.k3",
      }),
    ).toMatchObject({ group: "default" });
  });
  it("the group routes name their group", () => {
    expect(
      requiredAccess("DELETE", "/v1/topics/:topic/groups/:group", { topic: "o", group: "g1" }, undefined),
    ).toEqual({ kind: "action", action: "consume", topic: "o", group: "g1" });
    // Seeking skips or replays what the group consumes: consume on that topic and group.
    expect(
      requiredAccess("POST", "/v1/topics/:topic/groups/:group/seek", { topic: "o", group: "g3" }, undefined),
    ).toEqual({ kind: "action", action: "consume", topic: "o", group: "g3" });
    expect(
      requiredAccess("GET", "/v1/topics/:topic/consume", { topic: "o" }, undefined, { group: "g2" }),
    ).toEqual({
      kind: "action",
      action: "consume",
      topic: "o",
      group: "g2",
    });
  });
});
