// The images run the .ts sources, copied path by path: every module the entry
// point imports (transitively, relative imports) must be under one of the
// Dockerfile's COPY sources, or the image fails at start with a missing module.

import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./build-packages.ts";

function copiedSources(dockerfile: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(join(repoRoot, dockerfile), "utf8").split("\n")) {
    const m = /^COPY\s+(?!--from)(\S+)\s+\S+\s*$/.exec(line.trim());
    if (m !== null) out.push(m[1]!.replace(/\/$/, ""));
  }
  return out;
}

function importClosure(entry: string): string[] {
  const seen = new Set<string>();
  const todo = [resolve(repoRoot, entry)];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+\.ts)"/g)) {
      todo.push(resolve(dirname(file), m[1]!));
    }
  }
  return [...seen].map((f) => relative(repoRoot, f));
}

describe.each([
  ["broker/Dockerfile", "broker/src/entry.ts"],
  ["operator/Dockerfile", "operator/src/entry.ts"],
])("%s", (dockerfile, entry) => {
  it(`copies every module ${entry} imports`, () => {
    const sources = copiedSources(dockerfile);
    expect(sources.length).toBeGreaterThan(2);
    const closure = importClosure(entry);
    expect(closure.length).toBeGreaterThan(20);
    const missing = closure.filter((f) => !sources.some((s) => f === s || f.startsWith(s + "/")));
    expect(missing).toEqual([]);
  });
});
