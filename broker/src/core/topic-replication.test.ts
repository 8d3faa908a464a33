import { describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import type { Member } from "../meta/types.ts";
import {
  effectiveReplication,
  parseCreateReplication,
  parsePatchReplication,
  replicaBrokers,
} from "./topic-replication.ts";

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(NaradError);
    expect((err as NaradError).status).toBe(400);
    return (err as NaradError).apiCode;
  }
  return undefined;
}

const on = (brokers: number) => ({ enabled: true, brokers });
const off = (brokers: number) => ({ enabled: false, brokers });

describe("replicaBrokers", () => {
  const m = (id: string, state: Member["state"]): Member => ({ id, address: "", state });
  it("counts every member that can hold a replica, at least 1", () => {
    expect(replicaBrokers([])).toBe(1);
    expect(
      replicaBrokers([
        m("a", "Active"),
        m("b", "Joining"),
        m("c", "Maintenance"),
        m("d", "Down"),
        m("e", "Decommissioning"),
        m("f", "Removed"),
      ]),
    ).toBe(4);
  });
});

describe("parseCreateReplication", () => {
  it("gate on: ADR 0007's defaults by cluster size", () => {
    expect(parseCreateReplication({}, on(1))).toEqual({ replication_factor: 1, min_insync_replicas: 1 });
    expect(parseCreateReplication({}, on(2))).toEqual({ replication_factor: 1, min_insync_replicas: 1 });
    expect(parseCreateReplication({}, on(3))).toEqual({ replication_factor: 3, min_insync_replicas: 2 });
    expect(parseCreateReplication({ replication_factor: 2 }, on(5))).toEqual({
      replication_factor: 2,
      min_insync_replicas: 2,
    });
    expect(parseCreateReplication({ replication_factor: 5, min_insync_replicas: 4 }, on(5))).toEqual({
      replication_factor: 5,
      min_insync_replicas: 4,
    });
    // null is absent, as for the other fields.
    expect(parseCreateReplication({ replication_factor: null, min_insync_replicas: null }, on(3))).toEqual({
      replication_factor: 3,
      min_insync_replicas: 2,
    });
  });

  it("gate on: refuses what cannot be placed or is out of range, with the setting's code", () => {
    expect(codeOf(() => parseCreateReplication({ replication_factor: 4 }, on(3)))).toBe(
      "replication_factor_above_brokers",
    );
    for (const rf of [0, 6, 2.5, "3", true, -1])
      expect(
        codeOf(() => parseCreateReplication({ replication_factor: rf }, on(5))),
        String(rf),
      ).toBe("invalid_replication_factor");
    for (const min of [0, 4, 1.5, "2"])
      expect(
        codeOf(() => parseCreateReplication({ replication_factor: 3, min_insync_replicas: min }, on(3))),
        String(min),
      ).toBe("invalid_min_insync_replicas");
    // The default factor on a small cluster is 1: a minimum of 2 is above it.
    expect(codeOf(() => parseCreateReplication({ min_insync_replicas: 2 }, on(2)))).toBe(
      "invalid_min_insync_replicas",
    );
  });

  it("gate off: one copy whatever the cluster's size; a factor above 1 says how to enable it", () => {
    expect(parseCreateReplication({}, off(5))).toEqual({ replication_factor: 1, min_insync_replicas: 1 });
    expect(parseCreateReplication({ replication_factor: 1, min_insync_replicas: 1 }, off(5))).toEqual({
      replication_factor: 1,
      min_insync_replicas: 1,
    });
    let message = "";
    try {
      parseCreateReplication({ replication_factor: 3 }, off(5));
    } catch (err) {
      expect((err as NaradError).apiCode).toBe("replication_not_enabled");
      message = (err as Error).message;
    }
    expect(message).toMatch(/--replication on/);
    expect(message).toMatch(/NARAD_REPLICATION=on/);
    // Out of range is still out of range.
    expect(codeOf(() => parseCreateReplication({ replication_factor: 9 }, off(5)))).toBe(
      "invalid_replication_factor",
    );
    expect(codeOf(() => parseCreateReplication({ min_insync_replicas: 2 }, off(5)))).toBe(
      "invalid_min_insync_replicas",
    );
  });
});

describe("parsePatchReplication", () => {
  const rf3 = { replication_factor: 3, min_insync_replicas: 2 };
  it("takes the same factor as a no-op and refuses another", () => {
    expect(parsePatchReplication({ replication_factor: 3 }, rf3)).toEqual({});
    expect(parsePatchReplication({ replication_factor: null }, rf3)).toEqual({});
    for (const rf of [1, 2, 5, "3", 0])
      expect(
        codeOf(() => parsePatchReplication({ replication_factor: rf }, rf3)),
        String(rf),
      ).toBe("replication_factor_immutable");
    // A topic stored without the field has one copy.
    expect(parsePatchReplication({ replication_factor: 1 }, {})).toEqual({});
    expect(codeOf(() => parsePatchReplication({ replication_factor: 3 }, {}))).toBe(
      "replication_factor_immutable",
    );
  });

  it("moves min_insync_replicas within 1..factor", () => {
    expect(parsePatchReplication({ min_insync_replicas: 3 }, rf3)).toEqual({ min_insync_replicas: 3 });
    expect(parsePatchReplication({ min_insync_replicas: 1 }, rf3)).toEqual({ min_insync_replicas: 1 });
    expect(parsePatchReplication({ replication_factor: 3, min_insync_replicas: 1 }, rf3)).toEqual({
      min_insync_replicas: 1,
    });
    for (const min of [0, 4, "2", 2.5])
      expect(
        codeOf(() => parsePatchReplication({ min_insync_replicas: min }, rf3)),
        String(min),
      ).toBe("invalid_min_insync_replicas");
    expect(codeOf(() => parsePatchReplication({ min_insync_replicas: 2 }, {}))).toBe(
      "invalid_min_insync_replicas",
    );
    expect(parsePatchReplication({ retention_ms: 5 }, rf3)).toEqual({});
  });
});

describe("effectiveReplication", () => {
  it("reads absent fields as one copy, and an absent minimum as min(2, factor)", () => {
    expect(effectiveReplication({})).toEqual({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(effectiveReplication({ replication_factor: 3 })).toEqual({
      replicationFactor: 3,
      minInsyncReplicas: 2,
    });
    expect(effectiveReplication({ replication_factor: 3, min_insync_replicas: 3 })).toEqual({
      replicationFactor: 3,
      minInsyncReplicas: 3,
    });
  });
});
