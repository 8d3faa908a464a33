import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { chartValueDocs, valuePaths, valuesSchema } from "../operator/src/install/chart-values.ts";
import { chartValues } from "../operator/src/install/install.ts";
import { generate, REPO_ROOT } from "./gen-crds.ts";

describe("generated files match packages/api and operator/src/install", () => {
  const generated = generate();

  it.each([...generated.keys()])("%s is up to date", (path) => {
    const abs = join(REPO_ROOT, path);
    const onDisk = existsSync(abs) ? readFileSync(abs, "utf8") : undefined;
    // A plain boolean so the message, not a 600-line diff, is what one reads first.
    const upToDate = onDisk === generated.get(path);
    expect(upToDate, `${path} is ${onDisk === undefined ? "missing" : "stale"}: run npm run gen`).toBe(true);
  });

  it("chart values.yaml equals chartValues (the bundle's source)", () => {
    const values = load(readFileSync(join(REPO_ROOT, "charts/narad-operator/values.yaml"), "utf8"));
    expect(values, "charts/narad-operator/values.yaml differs from chartValues in install.ts").toEqual(
      chartValues,
    );
  });

  it("every chart value is documented and every documented path is a value", () => {
    const paths = valuePaths(chartValues);
    expect(Object.keys(chartValueDocs).filter((p) => !paths.includes(p))).toEqual([]);
    expect(paths.filter((p) => chartValueDocs[p] === undefined)).toEqual([]);
    // The schema carries each default.
    const schema = valuesSchema(chartValues) as { properties: Record<string, { default?: unknown }> };
    expect(schema.properties.replicas?.default).toBe(chartValues.replicas);
  });

  it("the bundle parses and holds Namespace, 3 CRDs, RBAC, Service, PodDisruptionBudget, Deployment", () => {
    const docs = loadAll(generated.get("deploy/narad-operator.yaml")!) as { kind: string }[];
    expect(docs.map((d) => d.kind)).toEqual([
      "Namespace",
      "CustomResourceDefinition",
      "CustomResourceDefinition",
      "CustomResourceDefinition",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "Role",
      "RoleBinding",
      "Service",
      "PodDisruptionBudget",
      "Deployment",
    ]);
  });
});

describe("dashboards/narad.json", () => {
  it("queries only broker metrics that broker/src/metrics.ts defines", () => {
    const dash = readFileSync(join(REPO_ROOT, "dashboards/narad.json"), "utf8");
    const defined = readFileSync(join(REPO_ROOT, "broker/src/metrics.ts"), "utf8");
    const used = new Set(
      [...dash.matchAll(/\b(narad_(?!operator_)[a-z_]+?)(_bucket|_sum|_count)?\b/g)].map((m) => m[1]!),
    );
    expect(used.size).toBeGreaterThan(0);
    expect([...used].filter((m) => !defined.includes(`"${m}"`))).toEqual([]);
  });
});

describe("operator RBAC and watchNamespaces (issue #21 item 12)", () => {
  it("with watchNamespaces set the chart grants a Role per namespace, and cluster-wide only StorageClass reads", () => {
    const t = generate().get("charts/narad-operator/templates/clusterrole.yaml") ?? "";
    const [limited = "", everywhere = ""] = t.split("{{- else }}");
    expect(limited).toContain("{{- if .Values.watchNamespaces }}");
    expect(limited).toContain("{{- range $ns := .Values.watchNamespaces }}");
    expect(limited).toContain("kind: Role\n");
    expect(limited).toContain("namespace: {{ $ns }}");
    const clusterScoped = limited.slice(limited.indexOf("kind: ClusterRole\n"));
    expect(clusterScoped.match(/resources:\n((?:\s+- .+\n)+)/g)?.join("")).toContain("storageclasses");
    expect(clusterScoped).not.toContain("statefulsets");
    expect(everywhere).toContain("kind: ClusterRole\n");
    expect(everywhere).toContain("statefulsets");
  });
});
