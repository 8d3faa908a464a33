import { describe, expect, it } from "vitest";
import { resolveReplicationSettings } from "./replication.ts";

describe("resolveReplicationSettings", () => {
  it("defaults to 3 and min 2 on a cluster of at least 3 brokers", () => {
    expect(resolveReplicationSettings({ brokers: 3 })).toEqual({
      ok: true,
      replicationFactor: 3,
      minInsyncReplicas: 2,
    });
    expect(resolveReplicationSettings({ brokers: 7 })).toMatchObject({ replicationFactor: 3 });
  });

  it("defaults to 1 with min 1 (min capped at the factor) below 3 brokers", () => {
    for (const brokers of [1, 2])
      expect(resolveReplicationSettings({ brokers })).toEqual({
        ok: true,
        replicationFactor: 1,
        minInsyncReplicas: 1,
      });
  });

  it("caps the default min at an explicit factor", () => {
    expect(resolveReplicationSettings({ brokers: 5, replicationFactor: 1 })).toMatchObject({
      minInsyncReplicas: 1,
    });
    expect(resolveReplicationSettings({ brokers: 5, replicationFactor: 5 })).toMatchObject({
      minInsyncReplicas: 2,
    });
  });

  it("refuses factors outside 1..5 and non-integers", () => {
    for (const replicationFactor of [0, 6, -1, 2.5, Number.NaN])
      expect(resolveReplicationSettings({ brokers: 9, replicationFactor })).toMatchObject({
        ok: false,
        code: "invalid_replication_factor",
      });
  });

  it("refuses a factor above the broker count", () => {
    const r = resolveReplicationSettings({ brokers: 2, replicationFactor: 3 });
    expect(r).toMatchObject({ ok: false, code: "replication_factor_above_brokers" });
    if (!r.ok) expect(r.message).toContain("at least 3 brokers");
  });

  it("refuses min_insync_replicas outside 1..factor", () => {
    for (const minInsyncReplicas of [0, 4, 1.5])
      expect(
        resolveReplicationSettings({ brokers: 3, replicationFactor: 3, minInsyncReplicas }),
      ).toMatchObject({ ok: false, code: "invalid_min_insync_replicas" });
    expect(
      resolveReplicationSettings({ brokers: 3, replicationFactor: 3, minInsyncReplicas: 3 }),
    ).toMatchObject({ ok: true, minInsyncReplicas: 3 });
  });
});
