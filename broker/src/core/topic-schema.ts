// A topic's JSON Schema as a topic setting: reading the `schema` field of a
// create or patch body, and deciding whether a new version is an additive
// evolution of the current one. Pure: no compiling, no I/O (the compiled
// validators are http/schema-validation.ts).
//
// Additive only, as Narad (Go) has it: a new version may add optional
// properties and widen types, never remove a property, narrow or change a
// type, or require a field the previous version did not. The check compares
// shapes (`type`, `properties`, `required`, and `items` below them, at every
// depth), not full JSON Schema semantics: other keywords (enum, minimum,
// pattern, ...) are not compared.

import { badRequest, NaradError } from "../errors.ts";
import type { TopicSchema } from "../meta/types.ts";

type SchemaObject = Record<string, unknown>;

function isObject(v: unknown): v is SchemaObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The `schema` field of a create or patch body as JSON text. Only a JSON
 * object is a schema here; whether it is a valid one is decided by compiling
 * it (http/schema-validation.ts).
 */
export function schemaDefinitionOf(value: unknown): string {
  if (!isObject(value)) throw schemaInvalid("schema must be a JSON Schema object");
  // Bounded before anything recurses over it: JSON.stringify, Ajv's
  // meta-schema check and compiler, and the compatibility check all recurse
  // per level, and a 1,000-level schema overflowed the stack (a 500).
  const depth = depthOf(value, schemaMaxDepth);
  if (depth > schemaMaxDepth)
    throw schemaInvalid(`schema nests deeper than ${schemaMaxDepth} levels (objects and arrays)`);
  const definition = JSON.stringify(value);
  // Compiling is synchronous on the event loop: a 1 MB schema held it for 2 s.
  if (Buffer.byteLength(definition) > schemaMaxBytes)
    throw schemaInvalid(`schema is larger than ${schemaMaxBytes} bytes as JSON`);
  return definition;
}

/** Most levels of nested objects and arrays a schema may have. */
export const schemaMaxDepth = 64;
/** Largest schema, as compact JSON text. */
export const schemaMaxBytes = 128 * 1024;

function schemaInvalid(message: string): NaradError {
  return new NaradError("BAD_REQUEST", message, { apiCode: "schema_invalid" });
}

/** Nesting depth of a JSON value (a scalar is 0), counted without recursion, stopping once past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    const here = d + 1;
    if (here > deepest) deepest = here;
    if (deepest > limit) return deepest;
    for (const child of Object.values(v)) stack.push({ v: child, d: here });
  }
  return deepest;
}

/** The schema of a new topic created with `schema` (version 1). */
export function firstSchema(value: unknown): TopicSchema {
  return { version: 1, definition: schemaDefinitionOf(value) };
}

/**
 * The topic's next schema version after a PATCH with `schema`, or a 400
 * `schema_incompatible` saying what changed. The first schema of a topic
 * that had none is version 1 and compatible with anything.
 */
export function nextSchema(current: TopicSchema | undefined, value: unknown): TopicSchema {
  // Versions only add: `"schema": null` would drop every rule at once.
  if (value === null) throw badRequest("a topic's schema cannot be removed, only evolved");
  const definition = schemaDefinitionOf(value);
  if (current === undefined) return { version: 1, definition };
  const change = incompatibility(
    JSON.parse(current.definition) as unknown,
    JSON.parse(definition) as unknown,
  );
  if (change !== undefined) {
    throw new NaradError(
      "BAD_REQUEST",
      `schema is not compatible with version ${current.version}: ${change} (schema changes must be additive: no removed properties, no changed or narrowed types, no new required fields)`,
      { apiCode: "schema_incompatible" },
    );
  }
  return { version: current.version + 1, definition };
}

/**
 * What makes `next` accept less than `previous`, in words, or undefined
 * when every change is additive. Total over any JSON values.
 */
export function incompatibility(previous: unknown, next: unknown): string | undefined {
  return compare(previous, next, []);
}

function where(path: readonly string[]): string {
  return path.length === 0 ? "the root" : `property "${path.join(".")}"`;
}

/** The `type` keyword as a list; undefined when absent (any type). */
function typesOf(schema: unknown): string[] | undefined {
  if (!isObject(schema)) return undefined;
  const t = schema.type;
  if (typeof t === "string") return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === "string");
  return undefined;
}

/** Whether a type in the new list still admits every value of `old` (integer fits number). */
function covered(old: string, next: readonly string[]): boolean {
  return next.includes(old) || (old === "integer" && next.includes("number"));
}

function fieldObject(schema: unknown, field: string): SchemaObject {
  if (!isObject(schema)) return {};
  const v = schema[field];
  return isObject(v) ? v : {};
}

function requiredOf(schema: unknown): string[] {
  if (!isObject(schema) || !Array.isArray(schema.required)) return [];
  return schema.required.filter((x): x is string => typeof x === "string");
}

function hasOwn(o: SchemaObject, key: string): boolean {
  return Object.hasOwn(o, key);
}

function compare(previous: unknown, next: unknown, path: readonly string[]): string | undefined {
  // A `false` schema accepted nothing: whatever follows accepts more.
  if (previous === false) return undefined;
  if (next === false) return `${where(path)} no longer accepts any value`;

  const oldTypes = typesOf(previous);
  const newTypes = typesOf(next);
  if (newTypes !== undefined) {
    if (oldTypes === undefined) {
      return `${where(path)}: type restricted to ${newTypes.join("|") || "nothing"} (it had no type)`;
    }
    if (!oldTypes.every((t) => covered(t, newTypes))) {
      return `${where(path)}: type changed from ${oldTypes.join("|")} to ${newTypes.join("|")}`;
    }
  }

  const oldProps = fieldObject(previous, "properties");
  const newProps = fieldObject(next, "properties");
  for (const name of Object.keys(oldProps)) {
    const childPath = [...path, name];
    if (!hasOwn(newProps, name)) return `${where(childPath)} removed`;
    const change = compare(oldProps[name], newProps[name], childPath);
    if (change !== undefined) return change;
  }

  const oldRequired = new Set(requiredOf(previous));
  for (const name of requiredOf(next)) {
    if (!oldRequired.has(name)) return `${where([...path, name])} is newly required`;
  }

  // Array items (the single-schema form) evolve by the same rules.
  if (isObject(previous) && isObject(next) && (isObject(previous.items) || isObject(next.items))) {
    const change = compare(previous.items ?? true, next.items ?? true, [...path, "[]"]);
    if (change !== undefined) return change;
  }
  return undefined;
}
