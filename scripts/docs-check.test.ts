import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { anchorsOf, checkDocs, headingSlug, linksOf } from "./docs-check.ts";

describe("docs check", () => {
  it("finds no broken link, anchor or unreachable page in this repository", () => {
    expect(checkDocs(resolve(import.meta.dirname, ".."))).toEqual([]);
  });

  it("slugs headings as GitHub does", () => {
    expect(headingSlug("Rolling restarts and membership")).toBe("rolling-restarts-and-membership");
    expect(headingSlug("TypeScript client (client/)")).toBe("typescript-client-client");
    expect([...anchorsOf("# A\n## B\n## B\n```\n# not a heading\n```\n")]).toEqual(["a", "b", "b-1"]);
  });

  it("ignores links inside code", () => {
    expect(linksOf("see [x](a.md) and `[y](b.md)`\n```\n[z](c.md)\n```\n")).toEqual(["a.md"]);
  });

  it("reports a missing file, a missing anchor and an orphan page", () => {
    const root = mkdtempSync(join(tmpdir(), "docs-check-"));
    mkdirSync(join(root, "docs"));
    writeFileSync(join(root, "README.md"), "# R\n[a](docs/a.md#nope) [m](docs/missing.md)\n");
    writeFileSync(join(root, "docs", "a.md"), "# A\n");
    writeFileSync(join(root, "docs", "orphan.md"), "# O\n");
    expect(checkDocs(root)).toEqual([
      "README.md: no heading #nope in docs/a.md",
      "README.md: link to missing docs/missing.md",
      "docs/orphan.md: not reachable from README.md",
    ]);
  });
});
