import { describe, expect, it } from "vitest";
import type { MemberState } from "../meta/types.ts";
import {
  afterConflict,
  decideKubernetes,
  decideSingleNode,
  decideWithoutOperator,
  type ObservedMember,
  type ScaleObservation,
} from "./decommission.ts";

const m = (ordinal: number, state: MemberState = "Active"): ObservedMember => ({
  id: `sc-${ordinal}`,
  ordinal,
  state,
});
const obs = (replicas: number, members: ObservedMember[], rolling?: string): ScaleObservation => ({
  replicas,
  resourceVersion: "100",
  members,
  rolling,
});
const three = () => obs(3, [m(0), m(1), m(2)]);

describe("one node", () => {
  it("nothing to decommission (409), nothing to cancel (204), a stranger 404", () => {
    const d = decideSingleNode(true, "n1", false);
    expect(d).toMatchObject({ kind: "refuse", status: 409 });
    expect(d.kind === "refuse" && d.error).toMatch(/nothing to decommission/);
    expect(decideSingleNode(true, "n1", true)).toMatchObject({ kind: "noop" });
    for (const cancel of [false, true])
      expect(decideSingleNode(false, "x", cancel)).toEqual({
        kind: "refuse",
        status: 404,
        error: 'member "x" not found',
      });
  });
  it("a cluster without an operator: 501 for a member, 404 for a stranger", () => {
    expect(decideWithoutOperator(true, "a")).toMatchObject({ kind: "refuse", status: 501 });
    expect(decideWithoutOperator(false, "a")).toMatchObject({ kind: "refuse", status: 404 });
  });
});

describe("Kubernetes: decommission (POST)", () => {
  it("the highest in-service ordinal: scale down by one", () => {
    expect(decideKubernetes(three(), "sc-2", false)).toMatchObject({ kind: "scale", from: 3, replicas: 2 });
  });
  it("a lower ordinal: 409 naming the member that can go and why", () => {
    for (const id of ["sc-0", "sc-1"]) {
      const d = decideKubernetes(three(), id, false);
      expect(d).toMatchObject({ kind: "refuse", status: 409 });
      const error = d.kind === "refuse" ? d.error : "";
      expect(error).toContain("removes pods from the top");
      expect(error).toContain('only "sc-2"');
      expect(error).toContain("/v1/cluster/members/sc-2/decommission");
    }
  });
  it("already being decommissioned (in progress, queued or done): idempotent", () => {
    const during = obs(2, [m(0), m(1), m(2, "Decommissioning")]);
    expect(decideKubernetes(during, "sc-2", false)).toMatchObject({ kind: "noop" });
    // asked for but not started yet (the operator's pass has not run, or it is blocked)
    expect(decideKubernetes(obs(2, [m(0), m(1), m(2)]), "sc-2", false)).toMatchObject({ kind: "noop" });
    // queued behind sc-2
    expect(decideKubernetes(obs(1, [m(0), m(1), m(2, "Decommissioning")]), "sc-1", false)).toMatchObject({
      kind: "noop",
    });
    expect(decideKubernetes(obs(2, [m(0), m(1), m(2, "Removed")]), "sc-2", false)).toMatchObject({
      kind: "noop",
    });
  });
  it("the next one while another is being decommissioned: queued behind it (scale down again)", () => {
    const during = obs(2, [m(0), m(1), m(2, "Decommissioning")]);
    expect(decideKubernetes(during, "sc-1", false)).toMatchObject({ kind: "scale", from: 2, replicas: 1 });
  });
  it("the last remaining member: 409, as on one node", () => {
    for (const o of [obs(1, [m(0)]), obs(1, [m(0), m(1, "Decommissioning")])]) {
      const d = decideKubernetes(o, "sc-0", false);
      expect(d).toMatchObject({ kind: "refuse", status: 409 });
      expect(d.kind === "refuse" && d.error).toMatch(/only remaining member.*nothing to decommission/);
    }
  });
  it("a member the cluster does not list: 404", () => {
    for (const cancel of [false, true])
      expect(decideKubernetes(three(), "sc-9", cancel)).toMatchObject({ kind: "refuse", status: 404 });
  });
  it("refused with nothing changed while the operator would block it: a roll, a remaining member not Active", () => {
    const rolling = decideKubernetes(obs(3, [m(0), m(1, "Maintenance"), m(2)], "sc-1"), "sc-2", false);
    expect(rolling).toMatchObject({ kind: "refuse", status: 409 });
    expect(rolling.kind === "refuse" && rolling.error).toContain("rolling restart is in progress (sc-1)");
    const down = decideKubernetes(obs(3, [m(0, "Down"), m(1), m(2)]), "sc-2", false);
    expect(down).toMatchObject({ kind: "refuse", status: 409 });
    expect(down.kind === "refuse" && down.error).toContain("sc-0 is Down");
    // the member leaving may itself be not Active: its data is the operator's concern
    expect(decideKubernetes(obs(3, [m(0), m(1), m(2, "Joining")]), "sc-2", false)).toMatchObject({
      kind: "scale",
    });
  });
});

describe("Kubernetes: cancel (DELETE)", () => {
  it("the member being decommissioned: scale up by one", () => {
    const during = obs(2, [m(0), m(1), m(2, "Decommissioning")]);
    expect(decideKubernetes(during, "sc-2", true)).toMatchObject({ kind: "scale", from: 2, replicas: 3 });
    // asked for, not started yet: the same
    expect(decideKubernetes(obs(2, [m(0), m(1), m(2)]), "sc-2", true)).toMatchObject({
      kind: "scale",
      replicas: 3,
    });
  });
  it("nothing being decommissioned, or already cancelled: 204 with nothing changed", () => {
    expect(decideKubernetes(three(), "sc-1", true)).toMatchObject({ kind: "noop" });
    expect(decideKubernetes(obs(3, [m(0), m(1), m(2, "Decommissioning")]), "sc-2", true)).toMatchObject({
      kind: "noop",
    });
  });
  it("past the point of no return (Removed): 409", () => {
    const d = decideKubernetes(obs(2, [m(0), m(1), m(2, "Removed")]), "sc-2", true);
    expect(d).toMatchObject({ kind: "refuse", status: 409 });
    expect(d.kind === "refuse" && d.error).toMatch(/cannot be cancelled: it is complete \(Removed/);
  });
  it("a member queued behind a lower one: 409, cancel the lower one first", () => {
    const d = decideKubernetes(obs(1, [m(0), m(1), m(2, "Decommissioning")]), "sc-2", true);
    expect(d).toMatchObject({ kind: "refuse", status: 409 });
    expect(d.kind === "refuse" && d.error).toContain('cancel "sc-1" first');
    expect(decideKubernetes(obs(1, [m(0), m(1), m(2, "Decommissioning")]), "sc-1", true)).toMatchObject({
      kind: "scale",
      replicas: 2,
    });
  });
});

describe("after a lost conditional write", () => {
  it("spec.replicas changed meanwhile: 409, nothing changed", () => {
    const d = afterConflict(three(), obs(4, [m(0), m(1), m(2), m(3, "Joining")]), "sc-2", false);
    expect(d).toMatchObject({ kind: "refuse", status: 409 });
    expect(d.kind === "refuse" && d.error).toContain("changed from 3 to 4");
  });
  it("only status moved: decided again from the fresh read", () => {
    expect(afterConflict(three(), { ...three(), resourceVersion: "101" }, "sc-2", false)).toMatchObject({
      kind: "scale",
      replicas: 2,
    });
    // the member became Removed meanwhile: the cancel is refused
    const first = obs(2, [m(0), m(1), m(2, "Decommissioning")]);
    const fresh = obs(2, [m(0), m(1), m(2, "Removed")]);
    expect(afterConflict(first, fresh, "sc-2", true)).toMatchObject({ kind: "refuse", status: 409 });
  });
});
