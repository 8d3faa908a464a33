import { describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import { firstSchema, incompatibility, nextSchema } from "./topic-schema.ts";

// The shapes of Narad (Go)'s e2e schema fixtures.
const v1 = {
  type: "object",
  properties: { id: { type: "integer" }, name: { type: "string" } },
  required: ["id"],
};
const v2Additive = {
  type: "object",
  properties: { id: { type: "integer" }, name: { type: "string" }, email: { type: "string" } },
  required: ["id"],
};
const v2TypeChange = {
  type: "object",
  properties: { id: { type: "string" }, name: { type: "string" } },
  required: ["id"],
};
const v2RemoveField = { type: "object", properties: { id: { type: "integer" } }, required: ["id"] };

function refusal(fn: () => unknown): NaradError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NaradError);
    return err as NaradError;
  }
  throw new Error("expected a refusal");
}

describe("incompatibility (additive-only evolution)", () => {
  it("accepts an identical schema and an added optional property", () => {
    expect(incompatibility(v1, v1)).toBeUndefined();
    expect(incompatibility(v1, v2Additive)).toBeUndefined();
  });

  it("refuses a changed type, a removed property and a newly required field, saying which", () => {
    expect(incompatibility(v1, v2TypeChange)).toBe('property "id": type changed from integer to string');
    expect(incompatibility(v1, v2RemoveField)).toBe('property "name" removed');
    expect(incompatibility(v1, { ...v1, required: ["id", "name"] })).toBe(
      'property "name" is newly required',
    );
  });

  it("lets a type widen (a union, or integer to number) but not narrow", () => {
    const prop = (type: unknown) => ({ properties: { n: { type } } });
    expect(incompatibility(prop("integer"), prop(["integer", "null"]))).toBeUndefined();
    expect(incompatibility(prop("integer"), prop("number"))).toBeUndefined();
    expect(incompatibility(prop(["string", "null"]), prop("string"))).toMatch(/type changed/);
    expect(incompatibility(prop("number"), prop("integer"))).toMatch(/type changed/);
    // No type accepted anything: adding one narrows; dropping one widens.
    expect(incompatibility({ properties: { n: {} } }, prop("string"))).toMatch(/type restricted/);
    expect(incompatibility(prop("string"), { properties: { n: {} } })).toBeUndefined();
  });

  it("applies the rules at every depth and to array items", () => {
    const nested = (props: object, required: string[] = []) => ({
      type: "object",
      properties: { address: { type: "object", properties: props, required } },
    });
    expect(incompatibility(nested({ city: { type: "string" } }), nested({}))).toBe(
      'property "address.city" removed',
    );
    expect(
      incompatibility(nested({ city: { type: "string" } }), nested({ city: { type: "string" } }, ["city"])),
    ).toBe('property "address.city" is newly required');
    const tags = (type: string) => ({ properties: { tags: { type: "array", items: { type } } } });
    expect(incompatibility(tags("string"), tags("integer"))).toBe(
      'property "tags.[]": type changed from string to integer',
    );
  });

  it("treats dropping a required field and the false schema as the sets they accept", () => {
    expect(incompatibility(v1, { ...v1, required: [] })).toBeUndefined();
    expect(incompatibility(false, v1)).toBeUndefined();
    expect(incompatibility({ properties: { id: { type: "integer" } } }, { properties: { id: false } })).toBe(
      'property "id" no longer accepts any value',
    );
  });

  it("changes the root's type too", () => {
    expect(incompatibility({ type: "object" }, { type: "array" })).toBe(
      "the root: type changed from object to array",
    );
  });

  it("is total over odd but well-formed JSON (never throws)", () => {
    const odd: unknown[] = [
      {},
      { properties: null },
      { properties: [] },
      { required: "id" },
      { type: 5 },
      { items: [1] },
      { properties: { a: 1 } },
      true,
      false,
    ];
    for (const a of odd) for (const b of odd) expect(() => incompatibility(a, b)).not.toThrow();
  });
});

describe("firstSchema / nextSchema", () => {
  it("starts at version 1 and adds one per compatible change", () => {
    const first = firstSchema(v1);
    expect(first).toEqual({ version: 1, definition: JSON.stringify(v1) });
    expect(nextSchema(undefined, v1)).toEqual(first);
    expect(nextSchema(first, v2Additive)).toEqual({ version: 2, definition: JSON.stringify(v2Additive) });
  });

  it("refuses an incompatible change with 400 schema_incompatible naming the change", () => {
    const err = refusal(() => nextSchema(firstSchema(v1), v2TypeChange));
    expect(err.status).toBe(400);
    expect(err.apiCode).toBe("schema_incompatible");
    expect(err.message).toMatch(/not compatible with version 1: property "id": type changed/);
  });

  it("refuses a schema that is not a JSON object, and removing the schema", () => {
    for (const bad of ["not a valid json schema", 5, [v1]]) {
      const err = refusal(() => firstSchema(bad));
      expect(err.status).toBe(400);
      expect(err.apiCode).toBe("schema_invalid");
    }
    expect(refusal(() => nextSchema(firstSchema(v1), null)).message).toMatch(/cannot be removed/);
  });
});
