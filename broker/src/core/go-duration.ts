// Go's time.ParseDuration, in milliseconds: query parameters (consume?wait=)
// and settings (--max-consume-wait) take what Narad (Go) takes, so clients
// and deployments written for it keep working. Pure.

// Go's units, in milliseconds.
const unitsMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "\u00b5s": 1e-3, // µs (micro sign)
  "\u03bcs": 1e-3, // μs (Greek mu)
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const term = /^(\d*(?:\.\d*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/u;

/**
 * "500ms", "10s", "1m30s", ".3s", "300000us", "-1s" and a bare "0", as Go
 * parses them. Fractions of a millisecond round up. Undefined when the text
 * is not a Go duration; the caller says what a negative value means.
 */
export function parseGoDurationMs(raw: string): number | undefined {
  let rest = raw;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") return undefined;
  let total = 0;
  while (rest !== "") {
    const m = term.exec(rest);
    const digits = m?.[1] ?? "";
    if (m === null || digits === "" || digits === ".") return undefined;
    total += Number(digits) * (unitsMs[m[2] as string] as number);
    rest = rest.slice(m[0].length);
  }
  return sign * Math.ceil(total);
}
