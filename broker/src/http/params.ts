// Query parameter parsing shared by the routes: strict integers with bounds
// and Go-style durations, each failing with a 400 that names the parameter
// (code invalid_query_parameter; bad_request for a path parameter).

import { parseGoDurationMs } from "../core/go-duration.ts";
import { badRequest, invalidQueryParameter, type NaradError } from "../errors.ts";

type ParamSource = "query" | "path";

const refusal = (source: ParamSource, message: string): NaradError =>
  source === "query" ? invalidQueryParameter(message) : badRequest(message);

export function parseOptionalInt(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
  source: ParamSource = "query",
): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw)) throw refusal(source, `${name} must be an integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw refusal(source, `${name} must be between ${min} and ${max}`);
  return n;
}

/**
 * A Go duration (core/go-duration.ts) in a query parameter; 400 naming the
 * parameter when it is not one.
 */
export function parseDurationMs(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const ms = parseGoDurationMs(raw);
  if (ms === undefined) throw invalidQueryParameter(`${name} must be a duration like 500ms, 10s or 1m30s`);
  return ms;
}
