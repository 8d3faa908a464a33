import { describe, expect, it } from "vitest";
import {
  emptyRegistryState,
  epochIn,
  freshRegistryState,
  indexById,
  initNamed,
  mergeRegistryStates,
  parseRegistryState,
  reserveBlock,
} from "./registry-state.ts";

describe("registry state", () => {
  it("merge is the newer of two views: max nextId, every name at its highest epoch", () => {
    const base = initNamed(reserveBlock(emptyRegistryState(), 10).state, "a", () => "p-0").state;
    const ahead = initNamed(initNamed(base, "a", () => "x").state, "b", () => "p-1").state;
    const other = reserveBlock(base, 10).state;
    const m = mergeRegistryStates(ahead, other);
    expect(m.nextId).toBe(20);
    expect(m.named).toEqual({ a: { id: "p-0", epoch: 1 }, b: { id: "p-1", epoch: 0 } });
    // Order does not matter, and an older view never takes a bump back.
    expect(mergeRegistryStates(other, ahead)).toEqual(m);
    expect(mergeRegistryStates(m, base)).toEqual(m);
  });

  it("a fresh registry starts at a random block and knows no id below it", () => {
    const s = freshRegistryState(1000, () => 0.5);
    expect(s.nextId).toBe(500_000_000_000);
    expect(s.firstId).toBe(s.nextId);
    const r = reserveBlock(s, 1000).state;
    expect(epochIn(r, indexById(r), "p-500000000000")).toBe(0);
    expect(epochIn(r, indexById(r), "p-500000000999")).toBe(0);
    expect(epochIn(r, indexById(r), "p-500000001000")).toBeUndefined();
    expect(epochIn(r, indexById(r), "p-3")).toBeUndefined();
  });

  it("parses a stored state field by field and refuses a damaged one", () => {
    const good = initNamed(reserveBlock(freshRegistryState(10), 10).state, "n", () => "p-1").state;
    expect(parseRegistryState(JSON.stringify(good))).toEqual(good);
    for (const bad of [
      "[]",
      '{"version":2,"nextId":0,"named":{}}',
      '{"version":1,"nextId":-1,"named":{}}',
      '{"version":1,"nextId":5,"firstId":6,"named":{}}',
      '{"version":1,"nextId":5,"named":{"x":{"id":"q-1","epoch":0}}}',
      '{"version":1,"nextId":5,"named":{"x":{"id":"p-1","epoch":-1}}}',
      '{"version":1,"nextId":5,"named":[]}',
    ])
      expect(() => parseRegistryState(bad), bad).toThrow();
  });
});
