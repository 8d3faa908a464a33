import { describe, expect, it } from "vitest";
import {
  childLinkProblem,
  deregisterChild,
  formatRegister,
  liveEntries,
  parseRegister,
  registerChild,
} from "./link-registry.ts";

const E = (n: number): string => n.toString(16).padStart(16, "0");

describe("fan-out register (the parent's side of a link)", () => {
  it("parses the annotation: absent is no register, malformed is an empty one, bad entries are dropped", () => {
    expect(parseRegister(undefined)).toBeUndefined();
    expect(parseRegister("not json")).toEqual(new Map());
    expect(parseRegister("[1]")).toEqual(new Map());
    expect(parseRegister("null")).toEqual(new Map());
    expect(parseRegister(JSON.stringify({ a: E(1), b: "short", c: 7, d: "ABCDEF0123456789" }))).toEqual(
      new Map([["a", E(1)]]),
    );
    const r = new Map([
      ["b", E(2)],
      ["a", E(1)],
    ]);
    expect(formatRegister(r)).toBe(`{"a":"${E(1)}","b":"${E(2)}"}`);
    expect(parseRegister(formatRegister(r))).toEqual(r);
  });

  it("an entry is live while its child carries that epoch", () => {
    const epochs: Record<string, string> = { a: E(1), b: E(9) };
    const r = new Map([
      ["a", E(1)],
      ["b", E(2)],
      ["gone", E(3)],
    ]);
    expect(liveEntries(r, (c) => epochs[c])).toEqual(new Map([["a", E(1)]]));
  });

  it("registers up to the limit, counting live entries only, and prunes dead ones", () => {
    const max = 3;
    const epochs: Record<string, string> = { a: E(1), b: E(2), c: E(3), d: E(4) };
    const epochOf = (c: string) => epochs[c];
    const full = new Map([
      ["a", E(1)],
      ["b", E(2)],
      ["c", E(3)],
    ]);
    const refused = registerChild({
      parent: "p",
      register: full,
      parentAttachedTo: undefined,
      child: "d",
      epoch: E(4),
      epochOf,
      maxChildren: max,
    });
    expect(refused).toEqual({ kind: "refuse", reason: `"p" already has 3 children, the maximum` });
    // c detached (its epoch gone): its entry is dead, d takes the slot, c pruned.
    epochs.c = undefined as unknown as string;
    const d = registerChild({
      parent: "p",
      register: full,
      parentAttachedTo: undefined,
      child: "d",
      epoch: E(4),
      epochOf,
      maxChildren: max,
    });
    expect(d).toEqual({
      kind: "write",
      register: new Map([
        ["a", E(1)],
        ["b", E(2)],
        ["d", E(4)],
      ]),
    });
  });

  it("registering again with the same epoch writes nothing, even when full", () => {
    const r = new Map([["a", E(1)]]);
    expect(
      registerChild({
        parent: "p",
        register: r,
        parentAttachedTo: undefined,
        child: "a",
        epoch: E(1),
        epochOf: () => E(1),
        maxChildren: 1,
      }),
    ).toEqual({ kind: "registered" });
  });

  it("a re-attach of a registered child replaces its entry (one slot, the new epoch)", () => {
    const epochs: Record<string, string> = { a: E(5) };
    const r = new Map([["a", E(1)]]);
    expect(
      registerChild({
        parent: "p",
        register: r,
        parentAttachedTo: undefined,
        child: "a",
        epoch: E(5),
        epochOf: (c) => epochs[c],
        maxChildren: 1,
      }),
    ).toEqual({ kind: "write", register: new Map([["a", E(5)]]) });
  });

  it("refuses a parent that carries an attachment of its own (one level deep)", () => {
    expect(
      registerChild({
        parent: "p",
        register: new Map(),
        parentAttachedTo: "q",
        child: "a",
        epoch: E(1),
        epochOf: () => E(1),
        maxChildren: 108,
      }),
    ).toEqual({ kind: "refuse", reason: `"p" is a child of "q": fan-out is one level deep` });
  });

  it("deregisters a child and prunes dead entries; nothing to change is undefined", () => {
    const epochs: Record<string, string> = { a: E(1), b: E(2) };
    const r = new Map([
      ["a", E(1)],
      ["b", E(2)],
      ["dead", E(3)],
    ]);
    expect(deregisterChild(r, "a", (c) => epochs[c])).toEqual(new Map([["b", E(2)]]));
    expect(deregisterChild(new Map([["b", E(2)]]), "a", (c) => epochs[c])).toBeUndefined();
  });

  it("the child's side: refused while it holds another link or has live children", () => {
    expect(
      childLinkProblem({ child: "c", epoch: E(1), current: undefined, liveChildren: 0 }),
    ).toBeUndefined();
    // Completing its own pending link.
    expect(
      childLinkProblem({
        child: "c",
        epoch: E(1),
        current: { parent: "p", epoch: E(1), pending: true },
        liveChildren: 0,
      }),
    ).toBeUndefined();
    expect(
      childLinkProblem({
        child: "c",
        epoch: E(2),
        current: { parent: "p", epoch: E(1), pending: false },
        liveChildren: 0,
      }),
    ).toBe(`"c" is already a child of "p"`);
    expect(
      childLinkProblem({
        child: "c",
        epoch: E(2),
        current: { parent: "p", epoch: E(1), pending: true },
        liveChildren: 0,
      }),
    ).toMatch(/"c" is being attached to "p"/);
    expect(childLinkProblem({ child: "c", epoch: E(2), current: undefined, liveChildren: 1 })).toBe(
      `"c" has children of its own: fan-out is one level deep`,
    );
  });

  it("two attaches decided from one version: whichever writes second is decided again and refused", () => {
    // The property the conditional write gives: each decision sees the other's result.
    const epochs: Record<string, string> = {};
    const epochOf = (c: string) => epochs[c];
    let register: ReadonlyMap<string, string> = new Map();
    for (let i = 0; i < 107; i++) {
      epochs[`c${i}`] = E(i + 1);
      register = new Map([...register, [`c${i}`, E(i + 1)]]);
    }
    epochs.x = E(1000);
    epochs.y = E(1001);
    const first = registerChild({
      parent: "p",
      register,
      parentAttachedTo: undefined,
      child: "x",
      epoch: E(1000),
      epochOf,
      maxChildren: 108,
    });
    expect(first.kind).toBe("write");
    if (first.kind === "write") register = first.register;
    const second = registerChild({
      parent: "p",
      register,
      parentAttachedTo: undefined,
      child: "y",
      epoch: E(1001),
      epochOf,
      maxChildren: 108,
    });
    expect(second.kind).toBe("refuse");
  });
});
