// The regular-expression engine of topic schemas (`pattern`,
// `patternProperties`): RE2 semantics (re2js, pure JavaScript), whose match
// time is linear in the input. With V8's backtracking engine a hostile
// pattern such as `^(a+)+$` held the event loop for 50 s on a 33-byte
// payload, and every other request of the broker waited with it.
//
// RE2 has no lookaround and no backreferences: a schema using them is
// refused when it is set (400 schema_invalid). ECMAScript's `\uXXXX` and `\u{X...}` escapes,
// which RE2 spells `\x{...}`, are translated so the common schemas compile.

import type { Options } from "ajv";
import { RE2JS } from "re2js";

/** Ajv's pluggable engine type (not exported by name from "ajv"). */
type RegExpEngine = NonNullable<NonNullable<Options["code"]>["regExp"]>;
type RegExpLike = ReturnType<RegExpEngine>;

/** `pattern` with ECMAScript `\u` escapes written as RE2's `\x{...}`; everything else unchanged. */
export function toRe2Syntax(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c !== "\\" || i + 1 >= pattern.length) {
      out += c;
      continue;
    }
    const next = pattern[i + 1]!;
    if (next === "u") {
      const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(pattern.slice(i + 2));
      if (braced !== null) {
        out += `\\x{${braced[1]}}`;
        i += 1 + braced[0].length;
        continue;
      }
      const hex = pattern.slice(i + 2, i + 6);
      if (/^[0-9a-fA-F]{4}$/.test(hex)) {
        out += `\\x{${hex}}`;
        i += 5;
        continue;
      }
    }
    // Any other escape (including `\\`) is copied whole, so its second
    // character is never read as the start of another escape.
    out += c + next;
    i++;
  }
  return out;
}

/** Ajv's `code.regExp`: compiles with RE2; a syntax RE2 lacks throws, and the schema is refused. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, _flags: string): RegExpLike => {
    const re = RE2JS.compile(toRe2Syntax(pattern));
    return { test: (s: string) => re.test(s) };
  },
  // Only read by Ajv's standalone code generation, which the broker does not use.
  { code: 'require("re2js").RE2JS.compile' },
);
