import { describe, expect, it } from "vitest";
import { topicNamePattern } from "../api-contract.ts";
import * as k from "../constants.ts";
import { groupSettings } from "../consumer/manager.ts";
import { parseSubscription, parseTopicCreate, parseTopicPatch, withSubscription } from "./topic-spec.ts";

const d = {
  partitions: 3,
  partitionsMin: k.topicPartitionsMin,
  partitionsMax: k.topicPartitionsMax,
  retentionMs: 1000,
  visibilityTimeoutMs: 30_000,
  maxInFlight: 10,
  maxAckedAhead: 20,
  namePattern: topicNamePattern,
};
const now = new Date("2026-01-01T00:00:00Z");

describe("parseTopicCreate", () => {
  it("applies defaults to a name-only request", () => {
    expect(parseTopicCreate({ name: "orders" }, d, now)).toEqual({
      name: "orders",
      partitions: 3,
      retention_ms: 1000,
      retention_bytes: 0,
      visibility_timeout_ms: 30_000,
      max_in_flight_per_partition: 10,
      max_acked_ahead_per_partition: 20,
      created_at: "2026-01-01T00:00:00.000Z",
    });
  });

  it.each([
    [{ name: "a/b" }, /name must match/],
    [{ name: ".." }, /name must match/],
    [{ name: "x".repeat(256) }, /name must match/],
    [{ name: "ok", partitions: 0 }, /partitions must be between/],
    [{ name: "ok", partitions: 109 }, /partitions must be between/],
    [{ name: "ok", partitions: 1.5 }, /partitions must be an integer/],
    [{ name: "ok", extra: 1 }, /unknown field "extra"/],
    [{ name: "ok", parent: "p" }, /unknown field "parent"/], // the route takes the fan-out fields out first
    ["nope", /JSON object/],
    [null, /JSON object/],
  ])("rejects %j", (body, message) => {
    expect(() => parseTopicCreate(body, d, now)).toThrow(message);
  });

  it("treats retention_ms 0 as the default", () => {
    expect(parseTopicCreate({ name: "t", retention_ms: 0 }, d, now).retention_ms).toBe(1000);
  });
});

describe("parseTopicPatch", () => {
  const current = parseTopicCreate({ name: "t", partitions: 4 }, d, now);
  it("allows increasing partitions only", () => {
    expect(parseTopicPatch({ partitions: 6 }, current, d)).toEqual({ partitions: 6 });
    expect(() => parseTopicPatch({ partitions: 2 }, current, d)).toThrow(/only be increased/);
  });
  it("refuses visibility changes", () => {
    expect(() => parseTopicPatch({ visibility_timeout_ms: 5 }, current, d)).toThrow(/cannot be changed/);
  });
});

describe("subscriptions", () => {
  it("accepts declared subscriptions on create, sorted by name, unset fields left out", () => {
    const t = parseTopicCreate(
      {
        name: "t",
        subscriptions: [
          { name: "search" },
          { name: "billing", visibility_timeout_ms: 200, max_in_flight_per_partition: 4 },
        ],
      },
      d,
      now,
    );
    expect(t.subscriptions).toEqual([
      { name: "billing", visibility_timeout_ms: 200, max_in_flight_per_partition: 4 },
      { name: "search" },
    ]);
    expect(parseTopicCreate({ name: "t" }, d, now)).not.toHaveProperty("subscriptions");
  });

  it.each([
    [{ subscriptions: "x" }, /subscriptions must be an array/],
    [{ subscriptions: [{ name: "a/b" }] }, /subscription name must match/],
    [{ subscriptions: [{ name: ".." }] }, /subscription name must match/],
    [{ subscriptions: [{}] }, /subscription name must match/],
    [{ subscriptions: [{ name: "a" }, { name: "a" }] }, /listed twice/],
    [{ subscriptions: [{ name: "a", visibility_timeout_ms: 0 }] }, /visibility_timeout_ms must be between/],
    [{ subscriptions: [{ name: "a", max_in_flight_per_partition: 1.5 }] }, /must be an integer/],
    [{ subscriptions: [{ name: "a", extra: 1 }] }, /unknown subscription field "extra"/],
    [{ subscriptions: ["a"] }, /JSON object/],
    [{ subscriptions: Array.from({ length: 101 }, (_, i) => ({ name: `g${i}` })) }, /at most 100/],
  ])("rejects %j", (extra, message) => {
    expect(() => parseTopicCreate({ name: "t", ...extra }, d, now)).toThrow(message);
  });

  it("PATCH replaces the whole list; null or [] clears it", () => {
    const current = parseTopicCreate({ name: "t", subscriptions: [{ name: "a" }] }, d, now);
    expect(parseTopicPatch({ subscriptions: [{ name: "b", visibility_timeout_ms: 5 }] }, current, d)).toEqual(
      {
        subscriptions: [{ name: "b", visibility_timeout_ms: 5 }],
      },
    );
    expect(parseTopicPatch({ subscriptions: null }, current, d)).toEqual({ subscriptions: [] });
    expect(parseTopicPatch({ subscriptions: [] }, current, d)).toEqual({ subscriptions: [] });
    expect(() => parseTopicPatch({ subscriptions: [{ name: "x" }, { name: "x" }] }, current, d)).toThrow(
      /listed twice/,
    );
  });

  it("parseSubscription validates one group's settings; withSubscription adds or replaces", () => {
    expect(parseSubscription("g", undefined, d)).toEqual({ name: "g" });
    expect(parseSubscription("g", { max_acked_ahead_per_partition: 7 }, d)).toEqual({
      name: "g",
      max_acked_ahead_per_partition: 7,
    });
    expect(() => parseSubscription("g", { name: "g" }, d)).toThrow(/unknown subscription field "name"/);
    expect(() => parseSubscription("g", [], d)).toThrow(/JSON object/);
    const t = parseTopicCreate({ name: "t", subscriptions: [{ name: "b" }, { name: "c" }] }, d, now);
    expect(withSubscription(t, { name: "a", visibility_timeout_ms: 9 })).toEqual([
      { name: "a", visibility_timeout_ms: 9 },
      { name: "b" },
      { name: "c" },
    ]);
    expect(withSubscription(t, { name: "b", max_in_flight_per_partition: 2 })).toEqual([
      { name: "b", max_in_flight_per_partition: 2 },
      { name: "c" },
    ]);
  });

  it("groupSettings: declared fields win, the rest (and undeclared groups) take the topic's", () => {
    const t = parseTopicCreate(
      { name: "t", subscriptions: [{ name: "fast", visibility_timeout_ms: 200 }] },
      d,
      now,
    );
    expect(groupSettings(t, "fast")).toEqual({
      declared: true,
      visibility_timeout_ms: 200,
      max_in_flight_per_partition: 10,
      max_acked_ahead_per_partition: 20,
    });
    expect(groupSettings(t, "default")).toEqual({
      declared: false,
      visibility_timeout_ms: 30_000,
      max_in_flight_per_partition: 10,
      max_acked_ahead_per_partition: 20,
    });
  });
});

describe("schema field", () => {
  const v1 = { type: "object", properties: { id: { type: "integer" } }, required: ["id"] };
  it("makes a create's schema version 1 and ignores a null one", () => {
    expect(parseTopicCreate({ name: "s", schema: v1 }, d, now).schema).toEqual({
      version: 1,
      definition: JSON.stringify(v1),
    });
    expect(parseTopicCreate({ name: "s", schema: null }, d, now)).not.toHaveProperty("schema");
  });
  it("makes each patched schema the next version, refusing incompatible ones", () => {
    const current = parseTopicCreate({ name: "s", schema: v1 }, d, now);
    const widened = { ...v1, properties: { id: { type: ["integer", "string"] } } };
    expect(parseTopicPatch({ schema: widened }, current, d).schema?.version).toBe(2);
    expect(() => parseTopicPatch({ schema: { ...v1, required: ["id", "x"] } }, current, d)).toThrow(
      /"x" is newly required/,
    );
    const plain = parseTopicCreate({ name: "p" }, d, now);
    expect(parseTopicPatch({ schema: v1, partitions: 4 }, plain, d)).toEqual({
      partitions: 4,
      schema: { version: 1, definition: JSON.stringify(v1) },
    });
  });
});
