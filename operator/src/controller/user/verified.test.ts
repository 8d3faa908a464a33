import { describe, expect, it } from "vitest";
import { hashPassword } from "../../../../packages/users/src/scrypt.ts";
import { passwordMatchesCached } from "./verified.ts";

describe("passwordMatchesCached", () => {
  it("answers like a verification, and a remembered match is no shortcut for another password or hash", async () => {
    const h = await hashPassword("right-password", 1024);
    const other = await hashPassword("right-password", 1024);
    expect(await passwordMatchesCached(h, "right-password")).toBe(true);
    expect(await passwordMatchesCached(h, "right-password")).toBe(true);
    expect(await passwordMatchesCached(h, "wrong-password")).toBe(false);
    expect(await passwordMatchesCached(other, "right-password")).toBe(true);
    expect(await passwordMatchesCached(other, "wrong-password")).toBe(false);
  });
});
