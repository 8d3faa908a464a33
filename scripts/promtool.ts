// promtool, Prometheus's own checker (`promtool check metrics` for names and
// types, `promtool check rules` for rule files), built from the Go module
// proxy into ~/.cache/narad-promtool/<version>/promtool:
//
//   node scripts/promtool.ts        (npm run tools:promtool; needs Go, ~10-30 min the first time)
//
// The tests that use it skip, saying so, when it has not been built; PROMTOOL
// points them at another binary.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Prometheus v3.x's Go module version (v0.3xx.y is Prometheus 3.xx.y). */
export const PROMTOOL_MODULE_VERSION = "v0.316.0";
const dir = join(homedir(), ".cache", "narad-promtool", PROMTOOL_MODULE_VERSION);

export function findPromtool(): string | undefined {
  const fromEnv = process.env["PROMTOOL"];
  if (fromEnv !== undefined && existsSync(fromEnv)) return fromEnv;
  const cached = join(dir, "promtool");
  return existsSync(cached) ? cached : undefined;
}

function build(): string {
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  execFileSync(
    "go",
    ["install", `github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_MODULE_VERSION}`],
    { stdio: "inherit", env: { ...process.env, GOBIN: partial, GOFLAGS: "-mod=mod" } },
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return join(dir, "promtool");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(findPromtool() ?? build());
