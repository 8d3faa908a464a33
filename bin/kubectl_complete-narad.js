#!/usr/bin/env node
// Shell completion of `kubectl narad`: kubectl (1.26+) runs an executable
// named kubectl_complete-narad on the PATH with the words typed after
// `kubectl narad` and reads cobra's __complete answer from it.
import { existsSync } from "node:fs";

process.argv.splice(2, 0, "__complete");
const source = new URL("../operator/src/kubectl-plugin/entry.ts", import.meta.url);
await import(
  existsSync(source)
    ? source.href
    : new URL("../dist/operator/src/kubectl-plugin/entry.js", import.meta.url).href
);
