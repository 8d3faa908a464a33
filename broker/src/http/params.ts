// Query parameter parsing shared by the routes: strict integers with bounds
// and Go-style durations, each failing with a 400 that names the parameter.

import { badRequest } from "../errors.ts";

export function parseOptionalInt(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw)) throw badRequest(`${name} must be an integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw badRequest(`${name} must be between ${min} and ${max}`);
  return n;
}

// Go's time.ParseDuration units, in milliseconds.
const durationUnitsMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "\u00b5s": 1e-3, // µs (micro sign)
  "\u03bcs": 1e-3, // μs (Greek mu)
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration as Go's time.ParseDuration does ("500ms", "10s",
 * "1m30s", ".3s", "300000us", "-1s", and a bare "0"), so clients written for
 * Narad (Go) send what they always sent. Fractions of a millisecond round up;
 * the caller decides what a negative wait means.
 */
export function parseDurationMs(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const invalid = () => badRequest(`${name} must be a duration like 500ms, 10s or 1m30s`);
  let rest = raw;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw invalid();
  const term = /^(\d*(?:\.\d*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/u;
  let total = 0;
  while (rest !== "") {
    const m = term.exec(rest);
    const digits = m?.[1] ?? "";
    if (m === null || digits === "" || digits === ".") throw invalid();
    total += Number(digits) * (durationUnitsMs[m[2] as string] as number);
    rest = rest.slice(m[0].length);
  }
  return sign * Math.ceil(total);
}
