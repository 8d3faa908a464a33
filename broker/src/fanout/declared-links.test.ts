// Links declared in NaradTopic spec.parent: which are admitted, refused
// (reported once, ignored) or ended, and which node decides.
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { DeclaredLink, Metastore, TopicConfig } from "../meta/types.ts";
import { createMemoryCluster } from "../testing/memory-metastore.ts";
import { DeclaredLinks, decidingMember, declaredLinkActions } from "./declared-links.ts";

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

const declared = (
  child: string,
  parent: string | undefined,
  extra: Partial<DeclaredLink> = {},
): DeclaredLink => ({
  child,
  parent,
  delayMs: 0,
  inEffect: false,
  ended: "none",
  reported: undefined,
  ...extra,
});

describe("declaredLinkActions", () => {
  it("admits a valid declaration and leaves one in effect alone", () => {
    const topics = [topic("p"), topic("c"), topic("d", { parent: "p", attach_epoch: "e" })];
    expect(
      declaredLinkActions(topics, [
        declared("c", "p", { delayMs: 0 }),
        declared("d", "p", { inEffect: true }),
      ]),
    ).toEqual([{ kind: "attach", child: "c", parent: "p", delayMs: 0 }]);
  });

  it("completes a link pending on the child's side with its own epoch; refused, reports without dropping it", () => {
    const pending = { epoch: "00000000000000aa", attachedAtMs: 1_700_000_000_000 };
    const children = Array.from({ length: 108 }, (_, i) =>
      topic(`k${i}`, { parent: "full", attach_epoch: `e${i}` }),
    );
    const topics = [topic("p"), topic("c"), topic("full"), topic("d"), ...children];
    expect(
      declaredLinkActions(topics, [
        declared("c", "p", { pending }),
        declared("d", "full", { pending: { ...pending, epoch: "00000000000000bb" } }),
      ]),
    ).toEqual([
      { kind: "attach", child: "c", parent: "p", delayMs: 0, resume: pending },
      {
        kind: "settle",
        child: "d",
        problem: `"full" already has 108 children, the maximum`,
        dropAdmission: false,
      },
    ]);
  });

  it("refuses what an attach would refuse, reports it once, and says nothing more while it is unchanged", () => {
    const topics = [topic("p", { retention_ms: 3_600_000 }), topic("c"), topic("self")];
    const actions = declaredLinkActions(topics, [
      declared("c", "p", { delayMs: 60_000 }),
      declared("self", "self"),
      declared("lost", "ghost"),
    ]);
    expect(actions.map((a) => a.kind)).toEqual(["settle", "settle", "settle"]);
    const [retention, self, missing] = actions as Array<
      Extract<(typeof actions)[number], { kind: "settle" }>
    >;
    expect(retention?.problem).toMatch(/retention_ms/);
    expect(self?.problem).toMatch(/itself/);
    expect(missing?.problem).toMatch(/ghost/);
    // The same problem already reported: no write (no loop on the watch event it causes).
    expect(
      declaredLinkActions(topics, [declared("c", "p", { delayMs: 60_000, reported: retention?.problem })]),
    ).toEqual([]);
  });

  it("decides one after the other: a chain or a 109th child declared at once is refused", () => {
    const chain = declaredLinkActions(
      [topic("a"), topic("b"), topic("c")],
      [declared("b", "a"), declared("c", "b")],
    );
    expect(chain[0]).toEqual({ kind: "attach", child: "b", parent: "a", delayMs: 0 });
    expect(chain[1]).toMatchObject({
      kind: "settle",
      child: "c",
      problem: expect.stringMatching(/one level/),
    });

    const kids = Array.from({ length: 109 }, (_, i) => `k${String(i).padStart(3, "0")}`);
    const many = declaredLinkActions(
      [topic("p"), ...kids.map((k) => topic(k))],
      kids.map((k) => declared(k, "p")),
    );
    expect(many.filter((a) => a.kind === "attach")).toHaveLength(108);
    expect(many.at(-1)).toMatchObject({
      kind: "settle",
      child: "k108",
      problem: expect.stringMatching(/108/),
    });
  });

  it("ends an admission that no longer holds", () => {
    const topics = [topic("p"), topic("q"), topic("c"), topic("d"), topic("e")];
    expect(
      declaredLinkActions(topics, [
        // parent deleted (or replaced by a namesake): standalone
        declared("c", "p", { ended: "parent-gone" }),
        // spec.parent removed by hand: the stale record goes
        declared("d", undefined, { ended: "spec-changed" }),
        // spec.parent changed to q: a fresh attach (it overwrites the record)
        declared("e", "q", { ended: "spec-changed" }),
      ]),
    ).toEqual([
      { kind: "unlink", child: "c" },
      { kind: "settle", child: "d", problem: undefined, dropAdmission: true },
      { kind: "attach", child: "e", parent: "q", delayMs: 0 },
    ]);
  });

  it("clears a report once the declaration is gone or in effect", () => {
    const topics = [topic("p"), topic("c", { parent: "p", attach_epoch: "e" }), topic("d")];
    expect(
      declaredLinkActions(topics, [
        declared("c", "p", { inEffect: true, reported: "old" }),
        declared("d", undefined, { reported: "old" }),
      ]),
    ).toEqual([
      { kind: "settle", child: "c", problem: undefined, dropAdmission: false },
      { kind: "settle", child: "d", problem: undefined, dropAdmission: false },
    ]);
  });
});

describe("decidingMember", () => {
  it("is the first Active member by id, the same on every node", () => {
    expect(
      decidingMember([
        { id: "demo-2", address: "", state: "Active" },
        { id: "demo-0", address: "", state: "Maintenance" },
        { id: "demo-1", address: "", state: "Active" },
      ]),
    ).toBe("demo-1");
    expect(decidingMember([{ id: "demo-0", address: "", state: "Down" }])).toBeUndefined();
  });
});

describe("DeclaredLinks (the runner)", () => {
  /** A memory metastore view with spec.parent-like declarations, as the kubernetes one reports them. */
  function declaring(
    view: Metastore,
    declarations: Map<string, string>,
    reports: Map<string, string | undefined>,
  ) {
    const writes: string[] = [];
    const ms: Metastore = Object.assign(Object.create(view) as Metastore, {
      declaredLinks: (): DeclaredLink[] =>
        [...declarations].map(([child, parent]) => ({
          child,
          parent,
          delayMs: 0,
          inEffect: view.getTopic(child)?.parent === parent,
          ended: "none" as const,
          reported: reports.get(child),
        })),
      settleDeclaredLink: async (child: string, problem: string | undefined) => {
        writes.push(`settle ${child}`);
        reports.set(child, problem);
      },
      updateTopic: (name: string, patch: Parameters<Metastore["updateTopic"]>[1]) => {
        writes.push(`update ${name}`);
        return view.updateTopic(name, patch);
      },
    });
    return { ms, writes };
  }

  it("only the deciding node writes; an admission happens once and a refusal is reported once", async () => {
    const cluster = createMemoryCluster([
      { id: "n0", address: "a", state: "Active" },
      { id: "n1", address: "b", state: "Active" },
    ]);
    const declarations = new Map([
      ["kid", "p"],
      ["orphan", "ghost"],
    ]);
    const reports = new Map<string, string | undefined>();
    const base = cluster.metastore();
    for (const t of ["p", "kid", "orphan"]) await base.createTopic({ ...topic(t), uid: undefined } as never);
    const nodes = ["n0", "n1"].map((id) => {
      const { ms, writes } = declaring(cluster.metastore(), declarations, reports);
      const runner = new DeclaredLinks({
        nodeId: id,
        metastore: ms,
        logger: pino({ level: "silent" }),
        nowMs: Date.now,
      });
      return { id, runner, writes };
    });
    for (let i = 0; i < 5; i++) {
      for (const n of nodes) n.runner.poke();
      await sleep(20);
    }
    expect(nodes[1]?.writes).toEqual([]);
    expect(nodes[0]?.writes).toEqual(["update kid", "settle orphan"]);
    expect(base.getTopic("kid")).toMatchObject({
      parent: "p",
      attach_epoch: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(reports.get("orphan")).toMatch(/ghost/);
    // n0 leaves: n1 decides from now on.
    cluster.setState("n0", "Maintenance");
    declarations.set("late", "p");
    await base.createTopic({ ...topic("late"), uid: undefined } as never);
    for (const n of nodes) n.runner.poke();
    await sleep(50);
    expect(nodes[1]?.writes).toEqual(["update late"]);
    expect(base.getTopic("late")?.parent).toBe("p");
  });
});
