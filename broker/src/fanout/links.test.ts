// Deleting a parent, one metastore write at a time: whichever write a crash
// interrupts, no child is left naming a parent that is gone (a dangling link
// would silently attach the child to the next topic created with that name,
// a different topic, with the old epoch and attach time).

import { describe, expect, it } from "vitest";
import type { Metastore } from "../meta/types.ts";
import { createMemoryCluster } from "../testing/memory-metastore.ts";
import { adoptedSchema, attachChild, deleteParentUnlinking } from "./links.ts";

const spec = (name: string) => ({
  name,
  partitions: 1,
  retention_ms: 0,
  retention_bytes: 0,
  visibility_timeout_ms: 30_000,
  max_in_flight_per_partition: 1024,
  max_acked_ahead_per_partition: 1024,
  created_at: new Date(0).toISOString(),
});

/** The metastore with its `n`-th write (create/update/delete) failing, as a crash at that point would. */
function crashingAt(ms: Metastore, n: number): Metastore {
  let writes = 0;
  const hit = () => {
    writes++;
    if (writes === n) throw new Error("crash");
  };
  return new Proxy(ms, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv) as unknown;
      if (typeof v !== "function") return v;
      if (prop === "updateTopic" || prop === "deleteTopic" || prop === "createTopic")
        return async (...a: unknown[]) => {
          hit();
          return (v as (...x: unknown[]) => unknown).apply(target, a);
        };
      return (v as (...x: unknown[]) => unknown).bind(target);
    },
  });
}

describe("deleteParentUnlinking", () => {
  for (const crashAt of [1, 2, 3, 4])
    it(`leaves no dangling link when write ${crashAt} fails`, async () => {
      const ms = createMemoryCluster().metastore();
      for (const t of ["p", "c1", "c2"]) await ms.createTopic(spec(t) as never);
      await attachChild(ms, "p", "c1", 0, 1);
      await attachChild(ms, "p", "c2", 0, 2);
      await deleteParentUnlinking(crashingAt(ms, crashAt), "p").catch(() => undefined);
      const names = new Set(ms.listTopics().map((t) => t.name));
      const dangling = ms.listTopics().filter((t) => t.parent !== undefined && !names.has(t.parent));
      expect(dangling.map((t) => t.name)).toEqual([]);
      // A namesake created afterwards has no children.
      if (!names.has("p")) {
        await ms.createTopic(spec("p") as never);
        expect(ms.listTopics().filter((t) => t.parent === "p")).toEqual([]);
      }
    });
});

describe("adoptedSchema", () => {
  const base = { ...spec("t"), uid: "u" };
  const v = (version: number) => ({ version, definition: '{"type":"object"}' });
  it("gives a child the parent's schema unless it already has that one at a version not lower", () => {
    expect(adoptedSchema({ ...base, schema: v(2) }, base)).toEqual({ schema: v(2) });
    expect(adoptedSchema({ ...base, schema: v(2) }, { ...base, schema: v(1) })).toEqual({ schema: v(2) });
    // A version never goes back (the NaradTopic CRD refuses it): the child keeps its own.
    expect(adoptedSchema({ ...base, schema: v(2) }, { ...base, schema: v(5) })).toEqual({});
    expect(adoptedSchema(base, base)).toEqual({});
  });
});
