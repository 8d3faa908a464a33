// Builds the compiled JavaScript that the packed packages ship (the sources
// stay .ts: development, the tests and the images run them directly).
//
//   node scripts/build-packages.ts wire     packages/wire/dist  (@narad/wire: .js + .d.ts)
//   node scripts/build-packages.ts client   client/dist         (@narad/client: .js + .d.ts)
//   node scripts/build-packages.ts narad    dist/               (the narad package: broker, CLI, operator)
//   node scripts/build-packages.ts all
//
// Each package's prepack runs its target, so `npm pack` always packs a fresh
// build. Node refuses to strip types under node_modules
// (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), which is why an installed
// package must be JavaScript.

import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");

function compile(project: string): void {
  execFileSync(process.execPath, [tsc, "-p", join(repoRoot, project)], { cwd: repoRoot, stdio: "inherit" });
}

/** A package directory gets the repository's LICENSE (npm packs it from there; the copy is git-ignored). */
function copyLicense(dir: string): void {
  cpSync(join(repoRoot, "LICENSE"), join(repoRoot, dir, "LICENSE"));
}

export function buildWire(): void {
  rmSync(join(repoRoot, "packages/wire/dist"), { recursive: true, force: true });
  compile("packages/wire/tsconfig.build.json");
  copyLicense("packages/wire");
}

/** The one import of the client's sources that leaves client/: its wire module. */
const wireSourceSpecifier = "../packages/wire/src/index";

export function buildClient(): void {
  const tmp = join(repoRoot, ".tmp/build-client");
  const dist = join(repoRoot, "client/dist");
  rmSync(tmp, { recursive: true, force: true });
  rmSync(dist, { recursive: true, force: true });
  compile("client/tsconfig.build.json");
  // tsc mirrors the repository under rootDir: keep client/, drop the copy of
  // the wire sources (the published client depends on @narad/wire instead).
  cpSync(join(tmp, "client"), dist, { recursive: true });
  rmSync(tmp, { recursive: true, force: true });
  copyLicense("client");
  for (const file of ["wire.js", "wire.d.ts"]) {
    const path = join(dist, file);
    const text = readFileSync(path, "utf8");
    const rewritten = text.replace(/"\.\.\/packages\/wire\/src\/index(\.js|\.ts)?"/g, '"@narad/wire"');
    if (rewritten === text) throw new Error(`${path}: no import of ${wireSourceSpecifier} to rewrite`);
    writeFileSync(path, rewritten);
  }
  for (const file of readdirSync(dist, { recursive: true, encoding: "utf8" })) {
    if (!/\.(js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(join(dist, file), "utf8");
    if (text.includes("../packages/") || text.includes("broker/src"))
      throw new Error(`client/dist/${file} still reaches outside the package`);
  }
}

export function buildNarad(): void {
  const dist = join(repoRoot, "dist");
  rmSync(dist, { recursive: true, force: true });
  compile("tsconfig.build.json");
  // The cluster RPC loads its service definition at run time, relative to
  // broker/src/rpc/proto.ts: ../../../proto from dist/broker/src/rpc.
  cpSync(join(repoRoot, "proto"), join(dist, "proto"), { recursive: true });
}

const targets: Record<string, () => void> = {
  wire: buildWire,
  client: buildClient,
  narad: buildNarad,
  all: () => {
    buildWire();
    buildClient();
    buildNarad();
  },
};

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const name = process.argv[2] ?? "all";
  const build = targets[name];
  if (build === undefined) {
    console.error(`usage: build-packages.ts ${Object.keys(targets).join("|")}`);
    process.exit(2);
  }
  build();
  if (name === "narad" && !existsSync(join(repoRoot, "dist/broker/src/entry.js")))
    throw new Error("dist/broker/src/entry.js was not emitted");
}
