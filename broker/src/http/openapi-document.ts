// The OpenAPI document as a standalone broker serves it: a throwaway
// in-process node (temp data dir, not listening) answers GET
// /v1/openapi.json. `npm run gen:openapi` writes it to docs/openapi.json;
// openapi.test.ts fails when the checked-in copy differs from what is served.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig } from "../config.ts";
import { startBroker } from "../node.ts";
import { openApiPath } from "./routes/openapi.ts";

/** The checked-in copy, relative to the repository root. */
export const openApiFile = "docs/openapi.json";

/** The document's bytes as checked in: 2-space JSON and a final newline. */
export function serialiseOpenApi(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export async function servedOpenApi(): Promise<unknown> {
  const dir = await mkdtemp(join(tmpdir(), "narad-openapi-"));
  const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "openapi");
  const broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
  try {
    const res = await broker.app.inject({ method: "GET", url: openApiPath });
    if (res.statusCode !== 200) throw new Error(`GET ${openApiPath}: ${res.statusCode} ${res.body}`);
    return JSON.parse(res.body) as unknown;
  } finally {
    await broker.shutdown();
    await rm(dir, { recursive: true, force: true });
  }
}
