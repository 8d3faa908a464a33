import { describe, expect, it } from "vitest";
import { decodeUsersDocument, encodeUsersDocument, UsersDocumentError } from "./document.ts";
import { hashPassword, parseScryptHash, passwordMatches } from "./scrypt.ts";

describe("scrypt format", () => {
  it("a hash verifies its password and no other, and parses with its parameters", async () => {
    const h = await hashPassword("s3cret-password", 1024, 8, 1);
    expect(await passwordMatches(h, "s3cret-password")).toBe(true);
    expect(await passwordMatches(h, "s3cret-passwore")).toBe(false);
    expect(parseScryptHash(h)).toMatchObject({ n: 1024, r: 8, p: 1 });
    expect(await passwordMatches("scrypt$not$a$hash", "x")).toBe(false);
  });
});

describe("users document", () => {
  it("round-trips canonically and refuses plaintext passwords and bad grants", async () => {
    const passwordHash = await hashPassword("pw-for-the-document", 1024);
    const users = new Map([
      ["b", { name: "b", passwordHash, grants: [], created_at_ms: 2, updated_at_ms: 2 }],
      [
        "a",
        {
          name: "a",
          passwordHash,
          grants: [{ action: "produce" as const, topics: "o-*" }],
          created_at_ms: 1,
          updated_at_ms: 1,
        },
      ],
    ]);
    const text = encodeUsersDocument(users);
    expect([...decodeUsersDocument(text).keys()]).toEqual(["a", "b"]);
    expect(encodeUsersDocument(decodeUsersDocument(text))).toBe(text);
    const plain = JSON.stringify({ version: 1, users: [{ name: "a", password: "x", passwordHash }] });
    expect(() => decodeUsersDocument(plain)).toThrow(UsersDocumentError);
    const badGrant = JSON.stringify({
      version: 1,
      users: [{ name: "a", passwordHash, grants: [{ action: "fly", topics: "*" }] }],
    });
    expect(() => decodeUsersDocument(badGrant)).toThrow(/grants\[0\]: action/);
  });
});
