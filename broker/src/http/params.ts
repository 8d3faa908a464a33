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

const durationUnitsMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go duration such as "500ms", "10s" or "1m30s". */
export function parseDurationMs(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(raw); m !== null; m = re.exec(raw)) {
    total += Number(m[1]) * (durationUnitsMs[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  if (consumed !== raw.length || consumed === 0)
    throw badRequest(`${name} must be a duration like 500ms or 10s`);
  return total;
}
