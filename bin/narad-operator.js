#!/usr/bin/env node
// Runs the TypeScript entry point directly: Node 24 strips types natively.
import "../operator/src/entry.ts";
