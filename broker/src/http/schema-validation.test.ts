import { describe, expect, it } from "vitest";
import { topicFixture } from "../meta/contract.ts";
import type { TopicConfig } from "../meta/types.ts";
import { compileSchema, SchemaGate } from "./schema-validation.ts";

const v1 = {
  type: "object",
  properties: { id: { type: "integer" }, name: { type: "string" } },
  required: ["id"],
};

function topicWith(schema: object | undefined, version = 1, uid = "uid-1"): TopicConfig {
  return {
    ...topicFixture("orders"),
    uid,
    ...(schema === undefined ? {} : { schema: { version, definition: JSON.stringify(schema) } }),
  };
}

const bytes = (s: string) => Buffer.from(s, "utf8");

function refusalOf(fn: () => void): { message: string; apiCode: string | undefined; status: number } {
  try {
    fn();
  } catch (err) {
    return err as { message: string; apiCode: string | undefined; status: number };
  }
  throw new Error("expected a refusal");
}

describe("compileSchema", () => {
  it("compiles draft 2020-12 by default, and draft-07 or 2019-09 when $schema says so", () => {
    expect(compileSchema(JSON.stringify(v1))({ id: 1 })).toBe(true);
    const d7 = compileSchema(JSON.stringify({ $schema: "http://json-schema.org/draft-07/schema#", ...v1 }));
    expect(d7({ id: "x" })).toBe(false);
    const d19 = compileSchema(
      JSON.stringify({ $schema: "https://json-schema.org/draft/2019-09/schema", ...v1 }),
    );
    expect(d19({ id: 2 })).toBe(true);
  });

  it("ignores unknown keywords and treats format as an annotation, as Narad does", () => {
    const v = compileSchema(JSON.stringify({ type: "string", format: "email", "x-owner": "team" }));
    expect(v("not an email")).toBe(true);
  });

  it("refuses an invalid schema with 400 schema_invalid saying why", () => {
    for (const bad of [
      { type: 123 },
      { $schema: "http://json-schema.org/draft-04/schema#" },
      { $ref: "#/nope" },
    ]) {
      const err = refusalOf(() => compileSchema(JSON.stringify(bad)));
      expect(err.status).toBe(400);
      expect(err.apiCode).toBe("schema_invalid");
      expect(err.message).toMatch(/^invalid schema: /);
    }
    expect(refusalOf(() => compileSchema("not json")).message).toMatch(/not JSON/);
    expect(refusalOf(() => compileSchema("[1]")).message).toMatch(/JSON object/);
  });
});

describe("SchemaGate", () => {
  it("accepts anything, even non-JSON, on a topic without a schema", () => {
    const gate = new SchemaGate({ onViolation: () => expect.unreachable() });
    gate.checkMessage(topicWith(undefined), bytes("not json"));
    gate.checkBatch(topicWith(undefined), [{ payload: Buffer.from([0xff, 0x00]) }]);
  });

  it("refuses a non-matching message naming the path and the reason, and counts it", () => {
    let violations = 0;
    const gate = new SchemaGate({ onViolation: () => violations++ });
    const t = topicWith(v1);
    gate.checkMessage(t, bytes('{"id": 42, "name": "ok"}'));
    const err = refusalOf(() => gate.checkMessage(t, bytes('{"id":"not-an-integer"}')));
    expect(err).toMatchObject({ status: 400, apiCode: "schema_violation" });
    expect(err.message).toBe(
      'message does not match the schema of topic "orders" (version 1): /id must be integer',
    );
    expect(refusalOf(() => gate.checkMessage(t, bytes('{"name":"x"}'))).message).toMatch(
      /: \/ must have required property 'id'$/,
    );
    expect(refusalOf(() => gate.checkMessage(t, bytes("{oops"))).message).toMatch(/is not valid JSON/);
    expect(refusalOf(() => gate.checkMessage(t, Buffer.from([0x7b, 0xff, 0x7d]))).message).toMatch(
      /is not valid JSON \(UTF-8\)/,
    );
    expect(violations).toBe(4);
  });

  it("refuses a whole batch on its first bad record, naming its index", () => {
    const gate = new SchemaGate({ onViolation: () => {} });
    const records = ['{"id":1}', '{"id":2}', '{"id":"three"}', '{"id":"four"}'].map((p) => ({
      payload: bytes(p),
    }));
    expect(refusalOf(() => gate.checkBatch(topicWith(v1), records)).message).toMatch(
      /^batch record 3 of 4 does not match .*: \/id must be integer$/,
    );
    gate.checkBatch(topicWith(v1), records.slice(0, 2));
  });

  it("compiles once per schema version and recompiles when the version, the incarnation or the definition changes", () => {
    const gate = new SchemaGate({ onViolation: () => {} });
    const strict = topicWith({ type: "object", required: ["id"] }, 1);
    expect(() => gate.checkMessage(strict, bytes("{}"))).toThrow();
    // Same (uid, version), another definition (a NaradTopic edited by hand, or
    // a uid-less topic re-created): the new definition is what validates.
    const sameVersion = { ...strict, schema: { version: 1, definition: "{}" } };
    gate.checkMessage(sameVersion, bytes("{}"));
    gate.checkMessage({ ...topicWith({}, 1, ""), name: "orders" }, bytes("{}"));
    const uidless = topicWith({ type: "object", required: ["id"] }, 1, "");
    expect(() => gate.checkMessage(uidless, bytes("{}"))).toThrow();
    gate.checkMessage(topicWith({ type: "object" }, 1, ""), bytes("{}"));
    // A new version is compiled afresh.
    gate.checkMessage({ ...strict, schema: { version: 2, definition: "{}" } }, bytes("{}"));
    // So is a new incarnation of the name at version 1.
    gate.checkMessage(topicWith({}, 1, "uid-2"), bytes("{}"));
  });
});
