import { describe, expect, it } from "vitest";
import {
  BROKER_ROLE_RULES,
  brokerRegistryRules,
  brokerScaleRules,
  grants,
  OPERATOR_CLUSTER_ROLE_RULES,
} from "./install.ts";

describe("RBAC", () => {
  it("the operator holds every permission it grants brokers (escalation check)", () => {
    const missing = [
      ...BROKER_ROLE_RULES,
      ...brokerRegistryRules("demo-producers", "demo-api-users"),
      ...brokerScaleRules("demo"),
    ].flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) =>
          r.verbs
            .filter((v) => !grants(OPERATOR_CLUSTER_ROLE_RULES, g, res, v))
            .map((v) => `${g}/${res}:${v}`),
        ),
      ),
    );
    expect(missing).toEqual([]);
  });

  it("pods: no create/update/patch/delete (restarts are Evictions), no pods/status", () => {
    for (const v of ["create", "update", "patch", "delete", "deletecollection"])
      expect(grants(OPERATOR_CLUSTER_ROLE_RULES, "", "pods", v)).toBe(false);
    expect(OPERATOR_CLUSTER_ROLE_RULES.some((r) => r.resources.includes("pods/status"))).toBe(false);
    expect(grants(OPERATOR_CLUSTER_ROLE_RULES, "", "pods/eviction", "create")).toBe(true);
    expect(OPERATOR_CLUSTER_ROLE_RULES.some((r) => r.verbs.includes("*") || r.resources.includes("*"))).toBe(
      false,
    );
  });
});
