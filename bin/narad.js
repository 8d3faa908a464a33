#!/usr/bin/env node
// Runs the TypeScript entry point directly: Node 24 strips types natively.
import "../broker/src/entry.ts";
