// tools/metricslint finds what promtool finds: the real binary (built on
// first use by scripts/metricslint.ts) on expositions and rule files that
// break Prometheus's conventions, and on clean ones.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkMetrics,
  checkRules,
  ensureMetricslint,
  METRICSLINT_BUILD_TIMEOUT_MS,
  METRICSLINT_SOURCE_DIR,
  sourceHash,
} from "./metricslint.ts";

let metricslint: string | undefined;
const dir = mkdtempSync(join(tmpdir(), "metricslint-test-"));
beforeAll(async () => {
  metricslint = await ensureMetricslint((line) => console.log(`metricslint.test.ts: ${line}`));
}, METRICSLINT_BUILD_TIMEOUT_MS);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("metricslint check metrics", () => {
  it("passes a clean exposition with exit 0", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const r = checkMetrics(
      metricslint,
      [
        "# HELP app_requests_total Requests served.",
        "# TYPE app_requests_total counter",
        'app_requests_total{code="200"} 3',
        "# HELP app_queue_depth_messages Messages waiting.",
        "# TYPE app_queue_depth_messages gauge",
        "app_queue_depth_messages 2",
        "",
      ].join("\n"),
    );
    expect(r.problems).toEqual([]);
    expect(r.code).toBe(0);
  });

  it("names a counter without _total and a camelCase name, exit 3 as promtool", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const r = checkMetrics(
      metricslint,
      [
        "# HELP app_requests Requests served.",
        "# TYPE app_requests counter",
        "app_requests 3",
        "# HELP appQueueDepth Messages waiting.",
        "# TYPE appQueueDepth gauge",
        "appQueueDepth 2",
        "# HELP app_latency_milliseconds Latency.",
        "# TYPE app_latency_milliseconds gauge",
        "app_latency_milliseconds 5",
        "",
      ].join("\n"),
    );
    expect(r.code).toBe(3);
    expect(r.problems).toContain('app_requests counter metrics should have "_total" suffix');
    expect(r.problems).toContain(
      "appQueueDepth metric names should be written in 'snake_case' not 'camelCase'",
    );
    expect(r.problems).toContain(
      'app_latency_milliseconds use base unit "seconds" instead of "milliseconds"',
    );
  });

  it("refuses an exposition that does not parse, exit 1", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const r = checkMetrics(metricslint, "# TYPE x counter\nx{a=} 1\n");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error while linting:/);
  });
});

describe("metricslint check rules", () => {
  const good = [
    "groups:",
    "  - name: g",
    "    rules:",
    "      - alert: Down",
    "        expr: up == 0",
    "        for: 5m",
    "        annotations:",
    '          summary: "{{ $labels.instance }} is down"',
    "      - record: job:up:sum",
    "        expr: sum by (job) (up)",
    "",
  ].join("\n");

  it("accepts a valid file and counts its rules, exit 0", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const path = file("good.yaml", good);
    const r = checkRules(metricslint, [path]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Checking ${path}`);
    expect(r.stdout).toContain("SUCCESS: 2 rules found");
  });

  it("names invalid PromQL and a rule without expr, exit 1", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const path = file(
      "bad.yaml",
      [
        "groups:",
        "  - name: g",
        "    rules:",
        "      - alert: Unclosed",
        "        expr: rate(http_requests_total[5m] > 1",
        "      - alert: NoExpr",
        "        for: 5m",
        "",
      ].join("\n"),
    );
    const r = checkRules(metricslint, [path]);
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain("SUCCESS");
    expect(r.stderr).toContain("FAILED:");
    expect(r.stderr).toMatch(/"Unclosed": could not parse expression: .*unclosed left parenthesis/);
    expect(r.stderr).toContain(`"NoExpr": field 'expr' must be set in rule`);
  });

  it("refuses unknown fields and bad templates as Prometheus's loader does", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const path = file(
      "fields.yaml",
      [
        "groups:",
        "  - name: g",
        "    rules:",
        "      - alert: A",
        "        expr: up == 0",
        "        severity: page",
        "      - alert: B",
        "        expr: up == 0",
        "        annotations:",
        '          summary: "{{ $labels.instance "',
        "",
      ].join("\n"),
    );
    const r = checkRules(metricslint, [path]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/field severity not found/);
    const templates = checkRules(metricslint, [file("template.yaml", good.replace("}} is down", "is down"))]);
    expect(templates.code).toBe(1);
    expect(templates.stderr).toMatch(/annotation "summary"/);
  });

  it("finds duplicate rules (promtool's duplicate-rules lint), exit 3", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here");
    const path = file("dup.yaml", `${good}      - record: job:up:sum\n        expr: sum by (job) (up)\n`);
    const r = checkRules(metricslint, [path]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("1 duplicate rule(s) found.");
    expect(r.stderr).toContain("Metric: job:up:sum");
  });
});

describe("the cache key", () => {
  it("changes when a source file changes", () => {
    const copy = mkdtempSync(join(dir, "src-"));
    for (const name of ["go.mod", "go.sum"])
      writeFileSync(join(copy, name), `${name} of ${METRICSLINT_SOURCE_DIR}`);
    writeFileSync(join(copy, "main.go"), "package main\n");
    const before = sourceHash(copy);
    expect(before).toMatch(/^[0-9a-f]{16}$/);
    expect(sourceHash(copy)).toBe(before);
    writeFileSync(join(copy, "main.go"), "package main\n\nfunc main() {}\n");
    expect(sourceHash(copy)).not.toBe(before);
  });
});
