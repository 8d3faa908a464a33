import { describe, expect, it } from "vitest";
import type { NaradUser } from "../../../../packages/api/src/v1alpha1/types.ts";
import type { ApiUser } from "../../../../packages/users/src/document.ts";
import type { Grant } from "../../../../packages/users/src/grants.ts";
import { ANNOTATION_SYNCED_GRANTS, ANNOTATION_USER_MANAGED_BY } from "../../constants.ts";
import {
  applyEntry,
  encodeGrants,
  mirrorObjectName,
  planEntry,
  planMirror,
  planMirrorSync,
  removeOwnEntry,
} from "./decide.ts";

const produceOrders: Grant[] = [{ action: "produce", topics: "orders" }];
const consumeAll: Grant[] = [{ action: "consume", topics: "*", groups: "billing" }];

function entry(name: string, grants: Grant[], createdAtMs = 1000, hash = `scrypt$hash-of-${name}`): ApiUser {
  return { name, passwordHash: hash, grants, created_at_ms: createdAtMs, updated_at_ms: createdAtMs };
}

function cr(
  name: string,
  o: { grants?: Grant[]; api?: boolean; synced?: Grant[]; username?: string; cluster?: string } = {},
): NaradUser {
  const annotations: Record<string, string> = {};
  if (o.api) annotations[ANNOTATION_USER_MANAGED_BY] = "api";
  if (o.synced !== undefined) annotations[ANNOTATION_SYNCED_GRANTS] = encodeGrants(o.synced);
  return {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradUser",
    metadata: { name, namespace: "ns", annotations },
    spec: {
      cluster: o.cluster ?? "c",
      ...(o.grants === undefined ? {} : { grants: o.grants }),
      ...(o.username === undefined ? {} : { username: o.username }),
    },
  };
}

describe("planEntry (CR-managed users)", () => {
  it("creates a user the Users API does not have", () => {
    expect(
      planEntry({
        existing: undefined,
        grants: produceOrders,
        ownCreatedAtMs: undefined,
        passwordMatches: false,
      }),
    ).toEqual({ kind: "create" });
  });

  it("refuses to touch an API user it did not create (another password, no marker)", () => {
    const plan = planEntry({
      existing: entry("app", consumeAll),
      grants: produceOrders,
      ownCreatedAtMs: undefined,
      passwordMatches: false,
    });
    expect(plan.kind).toBe("conflict");
  });

  it("a marker for another incarnation of the name is no proof", () => {
    const plan = planEntry({
      existing: entry("app", consumeAll, 2000),
      grants: produceOrders,
      ownCreatedAtMs: 1000,
      passwordMatches: false,
    });
    expect(plan.kind).toBe("conflict");
  });

  it("owns its entry by the marker: a changed password and grants are both rewritten", () => {
    expect(
      planEntry({
        existing: entry("app", consumeAll),
        grants: produceOrders,
        ownCreatedAtMs: 1000,
        passwordMatches: false,
      }),
    ).toEqual({ kind: "update", grants: true, password: true });
  });

  it("adopts an entry its password verifies (a status write lost after the create)", () => {
    expect(
      planEntry({
        existing: entry("app", produceOrders),
        grants: consumeAll,
        ownCreatedAtMs: undefined,
        passwordMatches: true,
      }),
    ).toEqual({ kind: "update", grants: true, password: false });
    expect(
      planEntry({
        existing: entry("app", produceOrders),
        grants: produceOrders,
        ownCreatedAtMs: undefined,
        passwordMatches: true,
      }),
    ).toEqual({ kind: "unchanged" });
  });
});

describe("applyEntry / removeOwnEntry", () => {
  const others = new Map([["other", entry("other", consumeAll, 5, "scrypt$other")]]);

  it("a create keeps every other user and its hash", () => {
    const next = applyEntry(
      others,
      "app",
      { kind: "create" },
      { grants: produceOrders, passwordHash: "scrypt$new", nowMs: 77 },
    );
    expect(next.get("other")).toEqual(others.get("other"));
    expect(next.get("app")).toEqual({
      name: "app",
      passwordHash: "scrypt$new",
      grants: produceOrders,
      created_at_ms: 77,
      updated_at_ms: 77,
    });
    expect(others.has("app")).toBe(false);
  });

  it("a grants-only update keeps the hash and the creation time", () => {
    const current = new Map([...others, ["app", entry("app", produceOrders, 10, "scrypt$old")]]);
    const next = applyEntry(
      current,
      "app",
      { kind: "update", grants: true, password: false },
      { grants: consumeAll, passwordHash: undefined, nowMs: 99 },
    );
    expect(next.get("app")).toEqual({ ...entry("app", consumeAll, 10, "scrypt$old"), updated_at_ms: 99 });
  });

  it("a create without a hash is a bug, not a user without password", () => {
    expect(() =>
      applyEntry(others, "app", { kind: "create" }, { grants: [], passwordHash: undefined, nowMs: 1 }),
    ).toThrow();
  });

  it("removes only its own entry", () => {
    const current = new Map([...others, ["app", entry("app", produceOrders, 10)]]);
    expect(removeOwnEntry(current, "app", undefined, false)).toBeUndefined();
    expect(removeOwnEntry(current, "app", 9, false)).toBeUndefined();
    expect([...(removeOwnEntry(current, "app", 10, false)?.keys() ?? [])]).toEqual(["other"]);
    expect([...(removeOwnEntry(current, "app", undefined, true)?.keys() ?? [])]).toEqual(["other"]);
    expect(removeOwnEntry(current, "gone", 10, true)).toBeUndefined();
  });
});

describe("planMirrorSync (3-way merge of a mirror's grants)", () => {
  it("nothing to do when both sides equal the synced grants", () => {
    expect(
      planMirrorSync(
        cr("app", { api: true, grants: produceOrders, synced: produceOrders }),
        entry("app", produceOrders),
      ),
    ).toEqual({
      kind: "none",
    });
  });

  it("a CR edit goes to the API", () => {
    expect(
      planMirrorSync(
        cr("app", { api: true, grants: consumeAll, synced: produceOrders }),
        entry("app", produceOrders),
      ),
    ).toEqual({
      kind: "toApi",
      grants: consumeAll,
    });
  });

  it("an API change goes to the CR", () => {
    expect(
      planMirrorSync(
        cr("app", { api: true, grants: produceOrders, synced: produceOrders }),
        entry("app", consumeAll),
      ),
    ).toEqual({
      kind: "toCr",
      grants: consumeAll,
    });
  });

  it("both changed, or no base: the API wins", () => {
    const third: Grant[] = [{ action: "create", topics: "x-*" }];
    expect(
      planMirrorSync(cr("app", { api: true, grants: third, synced: produceOrders }), entry("app", consumeAll))
        .kind,
    ).toBe("toCr");
    expect(planMirrorSync(cr("app", { api: true, grants: third }), entry("app", consumeAll)).kind).toBe(
      "toCr",
    );
  });

  it("equal sides with a stale base only move the base", () => {
    expect(
      planMirrorSync(
        cr("app", { api: true, grants: consumeAll, synced: produceOrders }),
        entry("app", consumeAll),
      ),
    ).toEqual({
      kind: "mark",
      grants: consumeAll,
    });
  });
});

describe("planMirror", () => {
  it("mirrors unclaimed API users, skips names Kubernetes cannot hold, removes mirrors of deleted users", () => {
    const users = new Map([
      ["claimed", entry("claimed", produceOrders)],
      ["Billing.EU", entry("Billing.EU", produceOrders)],
      ["new-app", entry("new-app", consumeAll)],
      ["aliased", entry("aliased", consumeAll)],
    ]);
    const crs = [
      cr("claimed"),
      cr("other-name", { username: "aliased" }),
      cr("stale", { api: true }),
      cr("cr-managed-gone"),
    ];
    const plan = planMirror(users, crs);
    expect(plan.create).toEqual([{ objectName: "new-app", username: "new-app", grants: consumeAll }]);
    expect(plan.skipped.map((s) => s.username)).toEqual(["Billing.EU"]);
    // Only mirrors go with their API user; a CR-managed NaradUser recreates its user.
    expect(plan.remove.map((r) => r.metadata.name)).toEqual(["stale"]);
  });

  it("never mirrors root", () => {
    expect(mirrorObjectName("admin")).toBeUndefined();
    expect(planMirror(new Map([["admin", entry("admin", [])]]), []).create).toEqual([]);
  });
});
