#!/usr/bin/env node
// The `kubectl narad` plugin (kubectl runs any `kubectl-narad` on PATH): the
// TypeScript sources in a checkout, the compiled dist/ in an installed
// package (see bin/narad.js).
import { existsSync } from "node:fs";

const source = new URL("../operator/src/kubectl-plugin/entry.ts", import.meta.url);
await import(
  existsSync(source)
    ? source.href
    : new URL("../dist/operator/src/kubectl-plugin/entry.js", import.meta.url).href
);
