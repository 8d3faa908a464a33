import { describe, expect, it } from "vitest";
import { isForeignVolume, nextVolumeIds, recordedVolumeId, servingVolume } from "./volumes.ts";

describe("member volume ids", () => {
  const uuid = "0b7e6c1a-3f0e-4d8e-9a43-5d2f3f0c9e11";

  it("records a created or own volume by its uuid, a foreign one so that it matches no ISR entry", () => {
    expect(recordedVolumeId({ state: "created", uuid, memberId: "demo-0" })).toBe(uuid);
    expect(recordedVolumeId({ state: "own", uuid, memberId: "demo-0" })).toBe(uuid);
    const foreign = recordedVolumeId({ state: "foreign", reason: "another member", uuid });
    expect(foreign).toBe(`foreign:${uuid}`);
    expect(recordedVolumeId({ state: "foreign", reason: "does not parse", uuid: null })).toBe(
      "foreign:unreadable",
    );
    expect(servingVolume(uuid)).toBe(uuid);
    expect(servingVolume(foreign)).toBeUndefined();
    expect(servingVolume(undefined)).toBeUndefined();
    expect(servingVolume("")).toBeUndefined();
    expect(isForeignVolume(foreign)).toBe(true);
    expect(isForeignVolume(uuid)).toBe(false);
  });

  it("takes this pass's answers, keeps the last known value of a broker that did not answer, and reports changes", () => {
    const previous = new Map<string, string | undefined>([
      ["demo-0", "v0"],
      ["demo-1", "v1"],
      ["demo-2", undefined],
    ]);
    const r = nextVolumeIds(
      previous,
      new Map([
        ["demo-1", "v1-new"],
        ["demo-2", "v2"],
      ]),
    );
    expect([...r.volumeIds.entries()].sort()).toEqual([
      ["demo-0", "v0"],
      ["demo-1", "v1-new"],
      ["demo-2", "v2"],
    ]);
    // demo-2's first known value is no change; demo-1's new one is.
    expect(r.changes).toEqual([{ member: "demo-1", from: "v1", to: "v1-new" }]);
    expect(nextVolumeIds(new Map([["demo-0", "v0"]]), new Map([["demo-0", "v0"]])).changes).toEqual([]);
  });
});
