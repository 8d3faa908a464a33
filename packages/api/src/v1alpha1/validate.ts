// A small, strict interpreter of the JSONSchemaProps subset in schema.ts:
// enough to check examples, fixtures and defaults against the CRD schemas in
// unit tests without an API server. CEL rules are not evaluated. Unknown
// fields are errors (the API server would prune them silently, which hides
// typos in examples).

import type { JSONSchemaProps } from "./schema.ts";

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Errors of `value` against `schema`, each prefixed with its path; [] when valid. */
export function validate(value: unknown, schema: JSONSchemaProps, path = ""): string[] {
  const errs: string[] = [];
  const at = path || ".";
  if (schema["x-kubernetes-int-or-string"]) {
    const t = typeOf(value);
    if (t !== "integer" && t !== "string") return [`${at}: want int-or-string, got ${t}`];
    if (t === "string" && schema.pattern && !new RegExp(schema.pattern).test(value as string)) {
      errs.push(`${at}: "${value}" does not match ${schema.pattern}`);
    }
    return errs;
  }
  const t = typeOf(value);
  if (schema.type && !(t === schema.type || (schema.type === "number" && t === "integer"))) {
    return [`${at}: want ${schema.type}, got ${t}`];
  }
  if (schema.enum && !schema.enum.includes(value as string)) errs.push(`${at}: ${String(value)} not in enum`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum)
      errs.push(`${at}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum)
      errs.push(`${at}: ${value} > ${schema.maximum}`);
  }
  if (typeof value === "string") {
    if (schema.pattern && !new RegExp(schema.pattern).test(value))
      errs.push(`${at}: "${value}" !~ ${schema.pattern}`);
    if (schema.minLength !== undefined && value.length < schema.minLength) errs.push(`${at}: too short`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errs.push(`${at}: too long`);
    if (schema.format === "date-time" && Number.isNaN(Date.parse(value))) errs.push(`${at}: not a date-time`);
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => {
      errs.push(...validate(item, schema.items as JSONSchemaProps, `${path}[${i}]`));
    });
  }
  if (t === "object" && !schema["x-kubernetes-preserve-unknown-fields"]) {
    const o = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in o)) errs.push(`${at}: missing required ${r}`);
    for (const [k, v] of Object.entries(o)) {
      const sub = schema.properties?.[k] ?? schema.additionalProperties;
      if (sub === undefined) {
        // An object schema with neither properties nor additionalProperties is
        // only legal for metadata, which the API server validates itself.
        if (schema.properties !== undefined) errs.push(`${path}.${k}: unknown field`);
        continue;
      }
      errs.push(...validate(v, sub, `${path}.${k}`));
    }
  }
  return errs;
}

/**
 * `value` with OpenAPI defaults applied the way the API server does: a default
 * fills a missing property of an object that exists; then defaulting recurses
 * into it. Does not mutate its input.
 */
export function applyDefaults(value: unknown, schema: JSONSchemaProps): unknown {
  if (Array.isArray(value)) return schema.items ? value.map((v) => applyDefaults(v, schema.items!)) : value;
  if (typeOf(value) !== "object" || schema.properties === undefined) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [k, sub] of Object.entries(schema.properties)) {
    if (out[k] === undefined && sub.default !== undefined) out[k] = structuredClone(sub.default);
    if (out[k] !== undefined) out[k] = applyDefaults(out[k], sub);
  }
  return out;
}

/** Every schema node with its dotted path (".spec.storage.size"), depth first. */
export function* walk(schema: JSONSchemaProps, path = ""): Generator<[string, JSONSchemaProps]> {
  yield [path, schema];
  for (const [k, sub] of Object.entries(schema.properties ?? {})) yield* walk(sub, `${path}.${k}`);
  if (schema.items) yield* walk(schema.items, `${path}[]`);
  if (schema.additionalProperties) yield* walk(schema.additionalProperties, `${path}{}`);
}

/** Dotted paths (".a.b", "[]" for array items, "{}" for map values) present in a JSON value. */
export function valuePaths(value: unknown, path = "", out = new Set<string>()): Set<string> {
  out.add(path);
  if (Array.isArray(value)) for (const v of value) valuePaths(v, `${path}[]`, out);
  else if (typeOf(value) === "object") {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) valuePaths(v, `${path}.${k}`, out);
  }
  return out;
}
