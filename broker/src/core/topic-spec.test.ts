import { describe, expect, it } from "vitest";
import * as k from "../constants.ts";
import { parseTopicCreate, parseTopicPatch } from "./topic-spec.ts";

const d = {
  partitions: 3,
  partitionsMin: k.topicPartitionsMin,
  partitionsMax: k.topicPartitionsMax,
  retentionMs: 1000,
  visibilityTimeoutMs: 30_000,
  maxInFlight: 10,
  maxAckedAhead: 20,
  namePattern: k.topicNamePattern,
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
    [{ name: "ok", parent: "p" }, /not supported/],
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
