// One version ties the release together: the root package.json's `version` is
// the source, and the packages, the lockfile, the chart (version and
// appVersion), the images (tags, Dockerfile labels, the operator's default
// broker image) and the changelog must all say the same. A release bumps
// every place this test names.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { NARAD_VERSION } from "../broker/src/version.ts";
import { chartValues, OPERATOR_VERSION } from "../operator/src/install/install.ts";
import { DEFAULT_BROKER_IMAGE } from "../packages/api/src/v1alpha1/defaults.ts";
import { repoRoot } from "./build-packages.ts";

const read = (path: string): string => readFileSync(join(repoRoot, path), "utf8");
const json = (path: string): Record<string, unknown> => JSON.parse(read(path)) as Record<string, unknown>;
const version = json("package.json").version as string;

describe(`the release version (${version}, package.json)`, () => {
  it("is a semantic version", () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  });

  it("the npm packages and the lockfile agree", () => {
    const client = json("client/package.json");
    expect(client.version).toBe(version);
    expect((client.dependencies as Record<string, string>)["@narad/wire"]).toBe(version);
    expect(json("packages/wire/package.json").version).toBe(version);
    const lock = json("package-lock.json");
    expect(lock.version).toBe(version);
    expect((lock.packages as Record<string, { version?: string }>)[""]?.version).toBe(version);
  });

  it("the chart's version and appVersion agree", () => {
    const chart = load(read("charts/narad-operator/Chart.yaml")) as { version: string; appVersion: string };
    expect(chart.version).toBe(version);
    expect(chart.appVersion).toBe(version);
  });

  it("the images agree: operator version, default broker image, Dockerfile labels, build script", () => {
    expect(OPERATOR_VERSION).toBe(version);
    expect(NARAD_VERSION).toBe(version); // narad_build_info{version}
    expect(DEFAULT_BROKER_IMAGE).toBe(`ghcr.io/narad/narad:${version}`);
    expect(chartValues.brokerImage).toBe(DEFAULT_BROKER_IMAGE);
    for (const dockerfile of ["broker/Dockerfile", "operator/Dockerfile"]) {
      expect(read(dockerfile)).toContain(`ARG VERSION=${version}\n`);
    }
  });

  it("every image reference in shipped files (not tests) carries the version", () => {
    const files = execFileSync("git", ["ls-files"], { cwd: repoRoot, encoding: "utf8" })
      .split("\n")
      .filter((f) => f !== "" && !/\.test\.ts$/.test(f) && !f.startsWith("e2e/") && !f.startsWith("docs/"));
    const refs: string[] = [];
    for (const f of files) {
      let text: string;
      try {
        text = read(f);
      } catch {
        continue; // deleted in the work tree
      }
      for (const m of text.matchAll(/ghcr\.io\/narad\/narad(?:-operator)?:([A-Za-z0-9._-]+)/g)) {
        refs.push(`${f}: ${m[0]}`);
        if (m[1] !== version) throw new Error(`${f}: ${m[0]} is not version ${version}`);
      }
    }
    // The Dockerfiles, the chart values, the rendered bundle, the defaults, the build script, the examples.
    expect(refs.length).toBeGreaterThanOrEqual(8);
    expect(refs.some((r) => r.startsWith("examples/"))).toBe(true);
    expect(refs.some((r) => r.startsWith("deploy/"))).toBe(true);
  });

  it("CHANGELOG.md has a section for it", () => {
    expect(read("CHANGELOG.md")).toMatch(new RegExp(`^## \\[?${version.replace(/\./g, "\\.")}\\]?`, "m"));
  });
});
