import { describe, expect, it } from "vitest";
import type { MemberState } from "./dispatch-plan.ts";
import {
  clusterAddressOf,
  commitAddress,
  destinationOf,
  type MemberView,
  queueConsumePlan,
  routeRead,
} from "./routing.ts";

const member = (id: string, state: MemberState, extra: Partial<MemberView> = {}): MemberView => ({
  id,
  address: `10.0.0.${id.charCodeAt(0) - 96}:7942`,
  state,
  ...extra,
});

describe("clusterAddressOf", () => {
  it.each([
    [{ address: "10.0.0.1:7942" }, "10.0.0.1:7943"],
    [{ address: "[::1]:7942" }, "[::1]:7943"],
    [{ address: "host:7942", clusterAddress: "other:9000" }, "other:9000"],
    [{ address: "host:7942", clusterAddress: "" }, "host:7943"],
    [{ address: "no-port" }, undefined],
    [{ address: ":7942" }, undefined],
    [{ address: "h:65535" }, undefined],
    [{ address: "h:x" }, undefined],
  ])("%j → %s", (m, want) => {
    expect(clusterAddressOf(m)).toBe(want);
  });
});

describe("routeRead", () => {
  const members = [
    member("a", "Active"),
    member("b", "Maintenance"),
    member("c", "Down"),
    member("d", "Removed"),
    member("e", "Joining"),
    member("f", "Decommissioning"),
    member("g", "Active", { address: "bad" }),
  ];
  it.each([
    // owner, expected kind
    ["a", "local"], // my own partition, whatever membership says
    ["b", "forward"], // Maintenance: a draining owner still serves reads
    ["c", "unavailable"],
    ["d", "unavailable"],
    ["e", "forward"],
    ["f", "forward"],
    ["g", "unavailable"], // no usable address
    ["zz", "unavailable"], // not a member
    ["", "unavailable"], // unassigned
  ])("owner %s → %s", (owner, kind) => {
    const r = routeRead("a", owner, members, 1);
    expect(r.kind).toBe(kind);
    if (r.kind === "unavailable") expect(r.retryAfterSeconds).toBe(1);
    if (r.kind === "forward") expect(r.address).toBe(clusterAddressOf(members.find((m) => m.id === owner)!));
  });

  it("reads locally even when the local member is Down", () => {
    expect(routeRead("c", "c", members, 1).kind).toBe("local");
  });
});

describe("destinationOf", () => {
  const members = [member("a", "Maintenance"), member("b", "Down")];
  it("reports the member state of a peer owner", () => {
    expect(destinationOf("a", "b", members)).toEqual({ kind: "owner", nodeId: "b", state: "Down" });
  });
  it("holds an owner missing from the membership (Maintenance), never reroutes on partial knowledge", () => {
    expect(destinationOf("a", "x", members)).toEqual({ kind: "owner", nodeId: "x", state: "Maintenance" });
    expect(destinationOf("a", "", members)).toEqual({ kind: "owner", nodeId: "", state: "Maintenance" });
  });
  it("reports my own state for local partitions, Active when I am not listed", () => {
    expect(destinationOf("a", "a", members)).toEqual({ kind: "owner", nodeId: "a", state: "Maintenance" });
    expect(destinationOf("solo", "solo", [])).toEqual({ kind: "owner", nodeId: "solo", state: "Active" });
  });
});

describe("commitAddress", () => {
  it("finds the peer's cluster address or says why not", () => {
    const members = [member("a", "Active"), member("b", "Active", { address: "nope" })];
    expect(commitAddress("a", members)).toEqual({ ok: true, address: "10.0.0.1:7943" });
    expect(commitAddress("b", members).ok).toBe(false);
    expect(commitAddress("z", members).ok).toBe(false);
  });
});

describe("queueConsumePlan", () => {
  const members = [member("a", "Active"), member("b", "Maintenance"), member("c", "Down")];
  const owners = ["a", "b", "c", "a", "b", "", "x"];
  it("splits local partitions from probe-worthy peer partitions, skipping Down, unassigned and unknown owners", () => {
    expect(queueConsumePlan("a", owners, members, 0)).toEqual({
      local: [0, 3],
      remote: [
        { partition: 1, nodeId: "b", address: "10.0.0.2:7943" },
        { partition: 4, nodeId: "b", address: "10.0.0.2:7943" },
      ],
    });
  });
  it("rotates the probe order by start (wrapping), local stays sorted", () => {
    const plan = queueConsumePlan("a", owners, members, 4 + owners.length * 3);
    expect(plan.remote.map((r) => r.partition)).toEqual([4, 1]);
    expect(plan.local).toEqual([0, 3]);
  });
  it("a node owning nothing has only probes; no owners at all is empty", () => {
    expect(queueConsumePlan("z", ["a", "b"], members, 1).local).toEqual([]);
    expect(queueConsumePlan("z", ["a", "b"], members, 1).remote.map((r) => r.partition)).toEqual([1, 0]);
    expect(queueConsumePlan("a", [], members, 5)).toEqual({ local: [], remote: [] });
  });
});
