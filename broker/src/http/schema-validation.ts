// JSON Schema validation of produced messages, before the WAL append.
// Schemas are compiled with Ajv once per topic schema version and the
// compiled validator is kept until the topic's schema (or incarnation)
// changes. A topic without a schema accepts any payload, JSON or not.
//
// Drafts: 2020-12 when the schema names none (as Narad's validator),
// 2019-09 and draft-07 when its `$schema` names them. Unknown keywords are
// ignored and `format` is an annotation only, as in Narad: a schema Narad
// takes is taken here.

import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { NaradError } from "../errors.ts";
import type { TopicConfig } from "../meta/types.ts";
import { linearRegExp } from "./schema-regexp.ts";

const ajvOptions: Options = {
  strict: false,
  validateFormats: false,
  allErrors: false,
  logger: false,
  // `pattern` and `patternProperties` match in linear time (schema-regexp.ts):
  // a backtracking pattern must not hold the event loop.
  // Ajv's optimizer passes over the generated code cost more than they save
  // here: a 1,500-property schema compiled in 1.8-3.3 s with them and
  // 0.2-0.7 s without (compiling holds the event loop). Ajv nests the
  // generated code per property either way: ~2,000 sibling properties (fewer deep in a request)
  // overflow V8's parser, a 400 schema_invalid.
  code: { regExp: linearRegExp, optimize: false },
};

type AjvClass = typeof Ajv | typeof Ajv2019 | typeof Ajv2020;
type AjvInstance = InstanceType<AjvClass>;

/** `$schema` URI (without a trailing '#', either scheme) → the Ajv class for its draft. */
const drafts: ReadonlyMap<string, AjvClass> = new Map<string, AjvClass>([
  ["json-schema.org/draft/2020-12/schema", Ajv2020],
  ["json-schema.org/draft/2019-09/schema", Ajv2019],
  ["json-schema.org/draft-07/schema", Ajv],
]);

/**
 * One instance per draft that only checks schemas against the draft's
 * meta-schema: validateSchema registers nothing, so it can be shared, and
 * its meta-schema is compiled once instead of on every schema.
 */
const metaCheckers = new Map<AjvClass, AjvInstance>();

function metaCheckerFor(cls: AjvClass): AjvInstance {
  let checker = metaCheckers.get(cls);
  if (checker === undefined) {
    checker = new cls(ajvOptions);
    metaCheckers.set(cls, checker);
  }
  return checker;
}

function invalidSchema(why: string): NaradError {
  return new NaradError("BAD_REQUEST", `invalid schema: ${why}`, { apiCode: "schema_invalid" });
}

function draftFor(schema: Record<string, unknown>): AjvClass {
  const declared = schema.$schema;
  if (declared === undefined) return Ajv2020;
  const key = typeof declared === "string" ? declared.replace(/^https?:\/\//, "").replace(/#$/, "") : "";
  const cls = drafts.get(key);
  if (cls === undefined) {
    throw invalidSchema(
      `$schema ${JSON.stringify(declared)} is not supported (use draft 2020-12, 2019-09 or draft-07)`,
    );
  }
  return cls;
}

/** The stored JSON text as an object (a NaradTopic written by hand may hold anything). */
function parseDefinition(definition: string): Record<string, unknown> {
  let schema: unknown;
  try {
    schema = JSON.parse(definition);
  } catch {
    throw invalidSchema("the definition is not JSON");
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema))
    throw invalidSchema("a schema must be a JSON object");
  return schema as Record<string, unknown>;
}

/**
 * Compiles a schema definition (JSON text of an object), or refuses it with
 * a 400 `schema_invalid` naming what is wrong. The compiling instance is a
 * fresh one per schema: an instance keeps every schema it compiled (and its
 * `$id`s), so a shared one would grow with each version and let two topics'
 * `$id`s clash. It skips the meta-schema check, done by the shared checker.
 */
export function compileSchema(definition: string): ValidateFunction {
  const schema = parseDefinition(definition);
  const draft = draftFor(schema);
  const checker = metaCheckerFor(draft);
  // Both steps recurse per level of the schema: a stored definition that
  // was never bounded (a NaradTopic written by hand) may overflow the stack,
  // and that is the schema's fault, answered as such.
  let valid: boolean;
  try {
    valid = checker.validateSchema(schema) === true;
  } catch (err) {
    throw invalidSchema((err as Error).message);
  }
  if (!valid) throw invalidSchema(checker.errorsText(checker.errors, { dataVar: "schema" }));
  try {
    return new draft({ ...ajvOptions, validateSchema: false }).compile(schema);
  } catch (err) {
    throw invalidSchema((err as Error).message);
  }
}

function describe(error: ErrorObject | undefined): string {
  if (error === undefined) return "does not match";
  const path = error.instancePath === "" ? "/" : error.instancePath;
  return `${path} ${error.message ?? "does not match"}`;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Why `payload` does not match, or undefined when it does. */
function violation(validate: ValidateFunction, payload: Uint8Array): string | undefined {
  let instance: unknown;
  try {
    instance = JSON.parse(utf8.decode(payload));
  } catch {
    return "is not valid JSON (UTF-8)";
  }
  try {
    if (validate(instance)) return undefined;
  } catch (err) {
    // A recursive schema ({"items": {"$ref": "#"}}) walks the payload by
    // recursion: 200,000 nested arrays overflowed the stack (a 500).
    if (err instanceof RangeError) return "nests too deeply to be validated";
    throw err;
  }
  return describe(validate.errors?.[0]);
}

export interface SchemaGateOptions {
  /** Called once per refused request (narad_produce_rejected_total{reason="schema_violation"}). */
  onViolation: () => void;
}

/** The produce routes' schema check, with the compiled validators cached per topic. */
export class SchemaGate {
  /** Topic name → its compiled validator and the (uid, version, definition) it was compiled for. */
  private readonly compiled = new Map<
    string,
    { uid: string; version: number; definition: string; validate: ValidateFunction }
  >();
  private readonly onViolation: () => void;

  constructor(opts: SchemaGateOptions) {
    this.onViolation = opts.onViolation;
  }

  private validatorFor(topic: TopicConfig): ValidateFunction | undefined {
    const schema = topic.schema;
    if (schema === undefined) {
      this.compiled.delete(topic.name);
      return undefined;
    }
    const hit = this.compiled.get(topic.name);
    // The definition is compared too (a string compare, cheap next to a
    // validation): (uid, version) alone let a uid-less topic re-created under
    // its name, or a NaradTopic whose spec.schema was edited by hand without a
    // new version, keep the old validator on the nodes that had cached it.
    if (
      hit !== undefined &&
      hit.uid === topic.uid &&
      hit.version === schema.version &&
      hit.definition === schema.definition
    )
      return hit.validate;
    const validate = compileSchema(schema.definition);
    this.compiled.set(topic.name, {
      uid: topic.uid,
      version: schema.version,
      definition: schema.definition,
      validate,
    });
    return validate;
  }

  /** Refuses a single produce (400 `schema_violation`) whose message does not match. */
  checkMessage(topic: TopicConfig, payload: Uint8Array): void {
    const validate = this.validatorFor(topic);
    if (validate === undefined) return;
    const why = violation(validate, payload);
    if (why !== undefined) this.refuse(topic, "message", why);
  }

  /**
   * Refuses a whole batch (400 `schema_violation`, nothing stored) when any
   * record does not match, naming the first such record (from 1).
   */
  checkBatch(topic: TopicConfig, records: ReadonlyArray<{ payload: Uint8Array }>): void {
    const validate = this.validatorFor(topic);
    if (validate === undefined) return;
    for (let i = 0; i < records.length; i++) {
      const why = violation(validate, records[i]!.payload);
      // Counted from 1, as the NDJSON decoder names its lines.
      if (why !== undefined) this.refuse(topic, `batch record ${i + 1} of ${records.length}`, why);
    }
  }

  private refuse(topic: TopicConfig, which: string, why: string): never {
    this.onViolation();
    throw new NaradError(
      "BAD_REQUEST",
      `${which} does not match the schema of topic "${topic.name}" (version ${topic.schema?.version}): ${why}`,
      { apiCode: "schema_violation" },
    );
  }
}
