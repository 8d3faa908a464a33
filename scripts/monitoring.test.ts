// The monitoring pack: the alert rules (operator/src/install/alerts.ts,
// rendered to charts/narad-operator/files/narad-alerts.yaml), their
// runbooks, the chart's PrometheusRule and dashboard ConfigMap, and
// promtool's `check rules` on the rule file (tools/metricslint, built on
// first use by scripts/metricslint.ts; skipped, saying why, only where Go
// is missing).

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { alertRuleGroups, alertRules, RUNBOOK_BASE, runbookAnchor } from "../operator/src/install/alerts.ts";
import { OPERATOR_NAMESPACE } from "../operator/src/install/install.ts";
import { anchorsOf } from "./docs-check.ts";
import { REPO_ROOT } from "./gen-crds.ts";
import { checkRules, ensureMetricslint, METRICSLINT_BUILD_TIMEOUT_MS } from "./metricslint.ts";

const rulesFile = join(REPO_ROOT, "charts/narad-operator/files/narad-alerts.yaml");
let metricslint: string | undefined;
beforeAll(async () => {
  metricslint = await ensureMetricslint((line) => console.log(`monitoring.test.ts: ${line}`));
}, METRICSLINT_BUILD_TIMEOUT_MS);

describe("alert rules", () => {
  it("cover what the issue asks for", () => {
    const names = alertRules.map((a) => a.alert);
    for (const n of [
      "NaradNoReadyBrokers",
      "NaradMemberDown",
      "NaradConsumerLagGrowing",
      "NaradWalPendingGrowing",
      "NaradDispatchStalled",
      "NaradHighErrorRate",
      "NaradHighThrottleRate",
      "NaradDiskNearlyFull",
      "NaradAdmissionSaturated",
    ])
      expect(names).toContain(n);
    expect(new Set(names).size).toBe(names.length);
  });

  it("query only metrics that broker/src/metrics.ts (or the operator's operator/src/metrics.ts) defines", () => {
    const defined = ["broker/src/metrics.ts", "operator/src/metrics.ts"]
      .map((f) => readFileSync(join(REPO_ROOT, f), "utf8"))
      .join("\n");
    const used = new Set(
      alertRules.flatMap((a) => [...a.expr.matchAll(/\b(narad_[a-z_]+)\b/g)].map((m) => m[1]!)),
    );
    expect(used.size).toBeGreaterThan(8);
    expect([...used].filter((m) => !defined.includes(`"${m}"`))).toEqual([]);
  });

  it("each has a runbook section in docs/monitoring.md, which its runbook_url names", () => {
    const anchors = anchorsOf(readFileSync(join(REPO_ROOT, "docs/monitoring.md"), "utf8"));
    expect(alertRules.map((a) => runbookAnchor(a.alert)).filter((a) => !anchors.has(a))).toEqual([]);
    const groups = alertRuleGroups() as { groups: { rules: { annotations: { runbook_url: string } }[] }[] };
    for (const r of groups.groups[0]!.rules)
      expect(r.annotations.runbook_url.startsWith(`${RUNBOOK_BASE}#`)).toBe(true);
  });

  it("the committed rule file is what alerts.ts renders", () => {
    expect(load(readFileSync(rulesFile, "utf8"))).toEqual(alertRuleGroups());
  });

  it("promtool's check rules accepts the rule file", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here (see the log above)");
    const r = checkRules(metricslint, [rulesFile]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${alertRules.length} rules found`);
  });
});

describe("the chart's monitoring objects", () => {
  const helm = (() => {
    try {
      return execFileSync(
        "sh",
        ["-c", `ls ${process.env["HOME"]}/.cache/narad-k8s/tools/layer-*/helm/helm | head -1`],
        {
          encoding: "utf8",
        },
      ).trim();
    } catch {
      return "";
    }
  })();
  const render = (set: string[]) =>
    (
      loadAll(
        execFileSync(
          helm,
          [
            "template",
            "narad-operator",
            join(REPO_ROOT, "charts/narad-operator"),
            "-n",
            OPERATOR_NAMESPACE,
            ...set.flatMap((s) => ["--set", s]),
          ],
          { encoding: "utf8" },
        ),
      ) as ({
        kind: string;
        spec?: unknown;
        data?: Record<string, string>;
        metadata: { labels: Record<string, string> };
      } | null)[]
    ).filter((o) => o !== null);

  it.skipIf(helm === "")(
    "metrics.prometheusRule.enabled renders a PrometheusRule holding the rule file",
    () => {
      const rule = render([
        "metrics.prometheusRule.enabled=true",
        "metrics.prometheusRule.labels.release=prom",
      ]).find((o) => o.kind === "PrometheusRule");
      expect(rule?.spec).toEqual(alertRuleGroups());
      expect(rule?.metadata.labels["release"]).toBe("prom");
      expect(JSON.stringify(rule?.spec)).toContain("{{ $labels.pod }}");
    },
  );

  it.skipIf(helm === "")(
    "metrics.grafanaDashboard.enabled renders the dashboard as a sidecar ConfigMap",
    () => {
      const cm = render(["metrics.grafanaDashboard.enabled=true"]).find((o) => o.kind === "ConfigMap");
      expect(cm?.metadata.labels["grafana_dashboard"]).toBe("1");
      expect(JSON.parse(cm!.data!["narad.json"]!)).toEqual(
        JSON.parse(readFileSync(join(REPO_ROOT, "dashboards/narad.json"), "utf8")),
      );
    },
  );
});
