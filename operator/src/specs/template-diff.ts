// Names the first field where a live object differs from what we want, so a
// log line or Event can say WHY something changes ("spec.template.spec.
// containers[narad].image: a → b") instead of just "updated".
//
// Comparison is desired-relative: only fields the desired object sets are
// compared, because the API server fills in defaults (protocol, dnsPolicy,
// terminationMessagePath, ...) that we never wrote. Lists of named items
// (containers, env, ports, volumes, volumeMounts) are matched by name, and a
// named item present live but not desired is a difference (we removed it).
// Other lists are compared by position and length.

export interface FieldDiff {
  /** Dotted path, list items by [name] or [index]. */
  path: string;
  current: unknown;
  desired: unknown;
}

export function templateDiff(current: unknown, desired: unknown): FieldDiff | undefined {
  return diffAt("", current, desired);
}

/** "path: current → desired", values shortened for logs and Event messages. */
export function describeDiff(d: FieldDiff): string {
  return `${d.path || "(root)"}: ${short(d.current)} → ${short(d.desired)}`;
}

function diffAt(path: string, current: unknown, desired: unknown): FieldDiff | undefined {
  if (desired === undefined) return undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(current)) return { path, current, desired };
    return isNamedList(desired) ? diffNamedList(path, current, desired) : diffList(path, current, desired);
  }
  if (isObject(desired)) {
    if (!isObject(current)) return { path, current, desired };
    for (const key of Object.keys(desired)) {
      const d = diffAt(join(path, key), current[key], desired[key]);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (scalarEqual(current, desired)) return undefined;
  // The API server stores quantities in canonical form (0.5 → 500m, 1024Mi →
  // 1Gi): the same amount, not a drift to correct on every pass.
  if (path.includes("resources") && quantityEqual(current, desired)) return undefined;
  return { path, current, desired };
}

function diffList(path: string, current: unknown[], desired: unknown[]): FieldDiff | undefined {
  if (current.length !== desired.length) return { path, current, desired };
  for (let i = 0; i < desired.length; i++) {
    const d = diffAt(`${path}[${i}]`, current[i], desired[i]);
    if (d !== undefined) return d;
  }
  return undefined;
}

function diffNamedList(path: string, current: unknown[], desired: unknown[]): FieldDiff | undefined {
  const live = new Map<string, unknown>();
  for (const item of current)
    if (isObject(item) && typeof item["name"] === "string") live.set(item["name"], item);
  for (const item of desired as Array<Record<string, unknown>>) {
    const name = item["name"] as string;
    const d = diffAt(`${path}[${name}]`, live.get(name), item);
    if (d !== undefined) return d;
    live.delete(name);
  }
  const [extra] = live.keys();
  if (extra !== undefined) return { path: `${path}[${extra}]`, current: live.get(extra), desired: undefined };
  return undefined;
}

function isNamedList(list: unknown[]): boolean {
  return list.length > 0 && list.every((i) => isObject(i) && typeof i["name"] === "string");
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date);
}

/** Equal, treating a number and its decimal string as equal (quantities, ports). */
function scalarEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if ((typeof a === "number" && typeof b === "string") || (typeof a === "string" && typeof b === "number")) {
    return String(a) === String(b);
  }
  return false;
}

const QUANTITY =
  /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;
const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/**
 * A Kubernetes quantity as an exact rational (numerator, power of ten of the
 * denominator), or undefined when v is not one.
 */
export function parseQuantity(v: unknown): { num: bigint; scale: number } | undefined {
  const text = typeof v === "number" ? String(v) : typeof v === "string" ? v.trim() : undefined;
  if (text === undefined) return undefined;
  const m = QUANTITY.exec(text);
  if (m === null) return undefined;
  const [, sign = "", mantissa = "", suffix = ""] = m;
  const [int = "", frac = ""] = mantissa.split(".");
  let num = BigInt(`${int || "0"}${frac}`) * (sign === "-" ? -1n : 1n);
  let scale = frac.length; // value = num / 10^scale
  if (suffix in BINARY) num *= 1024n ** BigInt(BINARY[suffix] ?? 0);
  else {
    const exp = suffix in DECIMAL ? (DECIMAL[suffix] ?? 0) : suffix ? Number(suffix.slice(1)) : 0;
    scale -= exp;
  }
  return { num, scale };
}

/** Two quantities of the same amount ("0.5" and "500m", "1Gi" and "1024Mi"). */
export function quantityEqual(a: unknown, b: unknown): boolean {
  const x = parseQuantity(a);
  const y = parseQuantity(b);
  if (x === undefined || y === undefined) return false;
  const s = Math.max(x.scale, y.scale);
  return x.num * 10n ** BigInt(s - x.scale) === y.num * 10n ** BigInt(s - y.scale);
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function short(v: unknown): string {
  if (v === undefined) return "<unset>";
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
