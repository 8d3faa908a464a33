#!/usr/bin/env node
// The `narad` command. In a checkout it runs the TypeScript sources (Node 24
// strips types); an installed package ships no sources, only the compiled
// dist/ (Node does not strip types under node_modules), so it runs that.
import { existsSync } from "node:fs";

const source = new URL("../broker/src/entry.ts", import.meta.url);
await import(existsSync(source) ? source.href : new URL("../dist/broker/src/entry.js", import.meta.url).href);
