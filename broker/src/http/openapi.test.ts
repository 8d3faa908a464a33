// The OpenAPI document: served at GET /v1/openapi.json (no credentials),
// equal to the checked-in docs/openapi.json (a route change without
// `npm run gen:openapi` fails here), naming every route the broker
// registers, and a valid OpenAPI 3 document.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { type RunningBroker, startBroker } from "../node.ts";
import { openApiFile, serialiseOpenApi } from "./openapi-document.ts";

const root = resolve(import.meta.dirname, "../../..");

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { summary?: string; description?: string }>>;
}

/**
 * Method and URL of every route, read from fastify's own route tree
 * (printRoutes: one node a line, 4 columns of indent a level, a child's
 * segment continues its parent's). HEAD is fastify's automatic twin of GET.
 */
function registeredRoutes(broker: RunningBroker): Array<{ method: string; url: string }> {
  const out: Array<{ method: string; url: string }> = [];
  const stack: string[] = [];
  for (const line of broker.app.printRoutes({ commonPrefix: false }).split("\n")) {
    const m = /^(.*?)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (m === null) continue;
    const depth = (m[1] ?? "").length / 4;
    stack.length = depth;
    const url = (stack[depth - 1] ?? "") + (m[2] ?? "");
    stack.push(url);
    for (const method of (m[3] ?? "").split(", ").filter((x) => x !== "" && x !== "HEAD"))
      out.push({ method, url });
  }
  return out;
}

describe("OpenAPI document", () => {
  let dir: string;
  let broker: RunningBroker;
  let served: OpenApiDoc;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "narad-openapi-test-"));
    const config = loadConfig(["--data-dir", dir, "--addr", "127.0.0.1:0"], {}, "node-a");
    broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    const res = await broker.app.inject({ method: "GET", url: "/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    served = JSON.parse(res.body) as OpenApiDoc;
  });

  afterAll(async () => {
    await broker?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it("equals the checked-in docs/openapi.json (run npm run gen:openapi after changing a route)", () => {
    expect(serialiseOpenApi(served)).toBe(readFileSync(join(root, openApiFile), "utf8"));
  });

  it("names every registered route, each with a summary and description", () => {
    const routes = registeredRoutes(broker);
    // 31 routes today (GET/HEAD counted once): a parse that finds few is broken, not a pass.
    expect(routes.length).toBeGreaterThan(25);
    expect(routes).toContainEqual({ method: "POST", url: "/v1/topics/:topic/produce-batch" });
    expect(routes).toContainEqual({ method: "DELETE", url: "/admin/v1/moves/:topic/:partition" });
    for (const r of routes) {
      const path = r.url.replace(/:(\w+)/g, "{$1}");
      const op = served.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.url}`).toBeDefined();
      expect(op?.summary, `${r.method} ${r.url}`).toBeTruthy();
      expect(op?.description ?? "", `${r.method} ${r.url}`).not.toBe("");
    }
  });

  it("is a valid OpenAPI 3 document", async () => {
    expect(served.openapi).toMatch(/^3\./);
    const result = await validate(structuredClone(served) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
  });
});
