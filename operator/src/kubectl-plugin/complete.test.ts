import { describe, expect, it } from "vitest";
import { completionPlan, Directive, renderCompletion } from "./complete.ts";

const words = (typed: string[]) => {
  const plan = completionPlan(typed);
  if (plan.kind !== "words") throw new Error(`expected words, got ${plan.kind}`);
  return plan.words;
};

describe("completionPlan", () => {
  it("commands first, filtered by what is typed", () => {
    expect(words([""])).toEqual([
      "status",
      "restart",
      "rebalance",
      "credentials",
      "port-forward",
      "help",
      "version",
    ]);
    expect(words(["re"])).toEqual(["restart", "rebalance"]);
    expect(words(["help", ""])).toEqual(["status", "restart", "rebalance", "credentials", "port-forward"]);
    expect(words([])).toContain("status");
  });

  it("the cluster argument lists clusters with the connection flags typed so far", () => {
    expect(completionPlan(["status", "de"])).toEqual({ kind: "clusters", prefix: "de", connection: {} });
    expect(completionPlan(["-n", "shop", "--context=kind", "restart", ""])).toEqual({
      kind: "clusters",
      prefix: "",
      connection: { namespace: "shop", context: "kind" },
    });
    expect(completionPlan(["-nshop", "credentials", "--kubeconfig", "/k", ""])).toEqual({
      kind: "clusters",
      prefix: "",
      connection: { namespace: "shop", kubeconfig: "/k" },
    });
  });

  it("flags of the command being typed, and the connection flags", () => {
    expect(words(["status", "demo", "--"])).toEqual([
      "--kubeconfig",
      "--context",
      "--namespace",
      "--help",
      "--output",
    ]);
    expect(words(["port-forward", "demo", "--p"])).toEqual(["--pod"]);
    expect(words(["credentials", "--j"])).toEqual(["--json"]);
    expect(words(["--v"])).toEqual(["--version"]);
  });

  it("flag values: output formats, file names for --kubeconfig, nothing offered for the rest", () => {
    expect(words(["status", "demo", "-o", ""])).toEqual(["json", "yaml", "table"]);
    expect(words(["status", "demo", "--output", "y"])).toEqual(["yaml"]);
    expect(completionPlan(["--kubeconfig", ""])).toEqual({
      kind: "words",
      words: [],
      directive: Directive.Default,
    });
    expect(words(["-n", ""])).toEqual([]);
    expect(words(["port-forward", "demo", "--address", ""])).toEqual([]);
  });

  it("nothing after the last positional", () => {
    expect(words(["status", "demo", ""])).toEqual([]);
    expect(words(["port-forward", "demo", ""])).toEqual([]);
    expect(words(["nonsense", ""])).toEqual([]);
  });
});

describe("renderCompletion", () => {
  it("is cobra's __complete answer: a candidate a line, then :directive", () => {
    expect(renderCompletion(["demo", "prod"], Directive.NoFileComp)).toBe("demo\nprod\n:4\n");
    expect(renderCompletion([], Directive.Default)).toBe(":0\n");
  });
});
