// The code table and its documentation: every code is in docs/http-api.md's
// Errors table with its status, every status is an HTTP error status, and
// each NaradError kind's default code has the kind's status.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { type ApiErrorCode, apiErrors } from "./api-errors.ts";
import { coded, defaultApiCode, type ErrorCode, errorStatus, NaradError } from "./errors.ts";

const doc = readFileSync(resolve(import.meta.dirname, "../../docs/http-api.md"), "utf8");
const codes = Object.keys(apiErrors) as ApiErrorCode[];

describe("the API error codes", () => {
  it("are lowercase snake case, with a 4xx/5xx status and a one-line meaning", () => {
    for (const code of codes) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(apiErrors[code].status).toBeGreaterThanOrEqual(400);
      expect(apiErrors[code].status).toBeLessThan(600);
      expect(apiErrors[code].meaning).not.toMatch(/\n/);
    }
  });

  it("are all documented in docs/http-api.md's Errors table, with their status", () => {
    const section = doc.slice(doc.indexOf("## Errors"));
    const rows = new Map<string, number>();
    for (const m of section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)) rows.set(m[1]!, Number(m[2]));
    for (const code of codes) expect(rows.get(code), code).toBe(apiErrors[code].status);
    // No documented code the broker does not have.
    expect([...rows.keys()].filter((c) => !(c in apiErrors))).toEqual([]);
  });

  it("give each NaradError kind a default code of its own status", () => {
    for (const kind of Object.keys(errorStatus) as ErrorCode[]) {
      expect(apiErrors[defaultApiCode[kind]].status, kind).toBe(errorStatus[kind]);
      expect(new NaradError(kind, "m").apiCode).toBe(defaultApiCode[kind]);
    }
  });

  it("keep a NaradError's specific code, and drop one of another status", () => {
    expect(coded("NOT_FOUND", "topic_not_found", "m").apiCode).toBe("topic_not_found");
    expect(new NaradError("NOT_FOUND", "m", { apiCode: "topic_exists" }).apiCode).toBe("not_found");
  });
});
