#!/usr/bin/env node
// The `narad-operator` command: the TypeScript sources in a checkout, the
// compiled dist/ in an installed package (see bin/narad.js).
import { existsSync } from "node:fs";

const source = new URL("../operator/src/entry.ts", import.meta.url);
await import(
  existsSync(source) ? source.href : new URL("../dist/operator/src/entry.js", import.meta.url).href
);
