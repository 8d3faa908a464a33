import { describe, expect, it } from "vitest";
import { TOPIC_FANOUT_DELAY_MAX_MS } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type { TopicConfig } from "../meta/types.ts";
import {
  attachProblem,
  childrenOf,
  directProduceProblem,
  maxChildrenPerParent,
  maxFanoutDelayMs,
  retentionHoldsDelay,
  retentionPatchProblem,
  roleOf,
} from "./rules.ts";

const topic = (name: string, extra: Partial<TopicConfig> = {}): TopicConfig => ({
  name,
  uid: `uid-${name}`,
  partitions: 3,
  retention_ms: 0,
  retention_bytes: 0,
  visibility_timeout_ms: 30_000,
  max_in_flight_per_partition: 1024,
  max_acked_ahead_per_partition: 1024,
  created_at: "2026-01-01T00:00:00.000Z",
  ...extra,
});

const statusOf = (topics: TopicConfig[], p: string, c: string, delay = 0) =>
  attachProblem(topics, p, c, delay)?.status;

describe("fan-out link rules", () => {
  it("bounds the delay as the NaradTopic CRD does (spec.delayMs maximum)", () => {
    expect(maxFanoutDelayMs).toBe(TOPIC_FANOUT_DELAY_MAX_MS);
  });

  const base = [topic("p"), topic("c", { parent: "p", attach_epoch: "e" }), topic("s"), topic("o")];

  it("allows a plain attach and answers Narad's statuses for every forbidden link", () => {
    expect(statusOf(base, "p", "s")).toBeUndefined();
    expect(statusOf(base, "s", "s")).toBe(400);
    expect(statusOf(base, "ghost", "s")).toBe(404);
    expect(statusOf(base, "p", "ghost")).toBe(404);
    expect(statusOf(base, "c", "s")).toBe(409); // a child cannot be a parent
    expect(statusOf(base, "s", "p")).toBe(409); // a parent cannot be a child
    expect(statusOf(base, "o", "c")).toBe(409); // a second parent
    expect(statusOf(base, "p", "c")).toBe(409); // already attached
    expect(statusOf(base, "p", "s", -1)).toBe(400);
    expect(statusOf(base, "p", "s", maxFanoutDelayMs)).toBeUndefined();
    expect(statusOf(base, "p", "s", maxFanoutDelayMs + 1)).toBe(400);
  });

  it(`caps a parent at ${maxChildrenPerParent} children`, () => {
    const kids = Array.from({ length: maxChildrenPerParent }, (_, i) => topic(`k${i}`, { parent: "p" }));
    expect(statusOf([topic("p"), ...kids, topic("s")], "p", "s")).toBe(409);
    expect(statusOf([topic("p"), ...kids.slice(1), topic("s")], "p", "s")).toBeUndefined();
  });

  it("needs the parent's retention to be 0 or at least delay + 1h", () => {
    expect(retentionHoldsDelay(0, 5_000)).toBe(true);
    expect(retentionHoldsDelay(3_601_500, 1_500)).toBe(true);
    expect(retentionHoldsDelay(3_601_499, 1_500)).toBe(false);
    expect(retentionHoldsDelay(1, 0)).toBe(true);
    const short = [topic("p", { retention_ms: 7_200_000 }), topic("s")];
    expect(statusOf(short, "p", "s", 3_600_001)).toBe(400);
    expect(statusOf(short, "p", "s", 3_600_000)).toBeUndefined();
    const linked = [
      topic("p", { retention_ms: 7_200_000 }),
      topic("d", { parent: "p", fanout_delay_ms: 1500 }),
    ];
    expect(retentionPatchProblem(linked, "p", 3_600_000)?.status).toBe(400);
    expect(retentionPatchProblem(linked, "p", 3_700_000)).toBeUndefined();
    expect(retentionPatchProblem(linked, "p", 0)).toBeUndefined();
  });

  it("refuses a child whose schema differs from the parent's (409) and accepts a schema-less one", () => {
    const s1 = { version: 1, definition: '{"type":"object"}' };
    const s2 = { version: 1, definition: '{"type":"object","properties":{"a":{}}}' };
    expect(statusOf([topic("p", { schema: s1 }), topic("s")], "p", "s")).toBeUndefined();
    expect(statusOf([topic("p", { schema: s1 }), topic("s", { schema: s1 })], "p", "s")).toBeUndefined();
    expect(statusOf([topic("p", { schema: s1 }), topic("s", { schema: s2 })], "p", "s")).toBe(409);
    expect(statusOf([topic("p"), topic("s", { schema: s2 })], "p", "s")).toBe(409);
  });

  it("derives roles and children in attach order, and refuses direct produce only to delay children", () => {
    const ts = [
      topic("p"),
      topic("b", { parent: "p", attached_at_ms: 2 }),
      topic("a", { parent: "p", attached_at_ms: 3, fanout_delay_ms: 10 }),
      topic("s"),
    ];
    expect(childrenOf(ts, "p").map((t) => t.name)).toEqual(["b", "a"]);
    expect(ts.map((t) => roleOf(t, ts))).toEqual(["parent", "child", "child", "standalone"]);
    expect(directProduceProblem(ts[1]!)).toBeUndefined();
    expect(directProduceProblem(ts[2]!)?.status).toBe(409);
    expect(directProduceProblem(ts[3]!)).toBeUndefined();
  });
});
