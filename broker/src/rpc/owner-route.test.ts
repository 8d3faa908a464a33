import { describe, expect, it } from "vitest";
import type { MemberView } from "../core/routing.ts";
import { NaradError } from "../errors.ts";
import { ownerRoute } from "./owner-route.ts";

function deps(owner: string, members: MemberView[]) {
  return {
    nodeId: "n0",
    metastore: { ownerOf: () => owner, members: () => members },
    retryAfterSeconds: 2,
  };
}

describe("ownerRoute", () => {
  it("serves this node's own partitions locally, whatever membership says", () => {
    expect(ownerRoute(deps("n0", []), "t", 0)).toEqual({ kind: "local" });
  });

  it("forwards to a live peer owner at its cluster address", () => {
    const members: MemberView[] = [{ id: "n1", address: "10.0.0.2:7942", state: "Active" }];
    expect(ownerRoute(deps("n1", members), "t", 3)).toEqual({
      kind: "forward",
      nodeId: "n1",
      address: "10.0.0.2:7943",
      state: "Active",
    });
  });

  it.each([
    ["no owner yet", "", []],
    ["an unknown owner", "n9", []],
    ["a Down owner", "n1", [{ id: "n1", address: "10.0.0.2:7942", state: "Down" }]],
  ] as Array<[string, string, MemberView[]]>)(
    "answers 503 with Retry-After for %s",
    (_what, owner, members) => {
      let err: unknown;
      try {
        ownerRoute(deps(owner, members), "t", 1);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(NaradError);
      expect((err as NaradError).status).toBe(503);
      expect((err as NaradError).retryAfterSeconds).toBe(2);
      expect((err as NaradError).message).toContain("t/1 is unavailable");
    },
  );
});
