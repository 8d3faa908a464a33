import { describe, expect, it } from "vitest";
import {
  epochAt,
  lastEpoch,
  NO_EPOCH,
  offsetForLeaderEpoch,
  startEpoch,
  truncateHistory,
} from "./epoch-history.ts";

const h = [
  { epoch: 0, startOffset: 0 },
  { epoch: 2, startOffset: 10 },
  { epoch: 5, startOffset: 25 },
];

describe("epoch history", () => {
  it("starts epochs, replacing one that wrote nothing, refusing older epochs or offsets", () => {
    let x = startEpoch([], 1, 0);
    x = startEpoch(x, 3, 0);
    expect(x).toEqual([{ epoch: 3, startOffset: 0 }]);
    x = startEpoch(x, 4, 6);
    expect(x).toEqual([
      { epoch: 3, startOffset: 0 },
      { epoch: 4, startOffset: 6 },
    ]);
    expect(startEpoch(x, 4, 9)).toBe(x);
    expect(() => startEpoch(x, 2, 10)).toThrow(/older/);
    expect(() => startEpoch(x, 5, 5)).toThrow(/before/);
    expect(lastEpoch(x)).toBe(4);
    expect(lastEpoch([])).toBe(NO_EPOCH);
  });

  it("answers OffsetForLeaderEpoch with the largest known epoch at or below the one asked", () => {
    expect(offsetForLeaderEpoch(h, 40, 5)).toEqual({ epoch: 5, endOffset: 40 });
    expect(offsetForLeaderEpoch(h, 40, 9)).toEqual({ epoch: 5, endOffset: 40 });
    expect(offsetForLeaderEpoch(h, 40, 2)).toEqual({ epoch: 2, endOffset: 25 });
    expect(offsetForLeaderEpoch(h, 40, 4)).toEqual({ epoch: 2, endOffset: 25 });
    expect(offsetForLeaderEpoch(h, 40, 1)).toEqual({ epoch: 0, endOffset: 10 });
    expect(offsetForLeaderEpoch(h.slice(1), 40, 1)).toEqual({ epoch: NO_EPOCH, endOffset: 10 });
    expect(offsetForLeaderEpoch([], 0, 3)).toEqual({ epoch: NO_EPOCH, endOffset: 0 });
  });

  it("maps offsets to epochs and truncates with the log", () => {
    expect(epochAt(h, 0)).toBe(0);
    expect(epochAt(h, 24)).toBe(2);
    expect(epochAt(h, 25)).toBe(5);
    expect(truncateHistory(h, 25)).toEqual(h.slice(0, 2));
    expect(truncateHistory(h, 11)).toEqual(h.slice(0, 2));
    expect(truncateHistory(h, 0)).toEqual([]);
  });
});
