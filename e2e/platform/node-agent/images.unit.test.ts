import { describe, expect, it } from "vitest";
import { IMAGE_NOT_FOUND_MESSAGE, imageRepository, resolveImageCommand } from "./images.ts";

const ROOT = "/repo";
const NODE = "/repo/node_modules/.bin/node";

describe("imageRepository", () => {
  it("strips tags and digests but keeps registry ports", () => {
    expect(imageRepository("ghcr.io/narad/narad:1.2.3")).toBe("ghcr.io/narad/narad");
    expect(imageRepository("ghcr.io/narad/narad@sha256:abc")).toBe("ghcr.io/narad/narad");
    expect(imageRepository("localhost:5000/narad/narad")).toBe("localhost:5000/narad/narad");
    expect(imageRepository("localhost:5000/narad/narad:dev")).toBe("localhost:5000/narad/narad");
  });
});

describe("resolveImageCommand", () => {
  it("runs the broker for the narad image when command is absent", () => {
    const r = resolveImageCommand("ghcr.io/narad/narad:0.1", undefined, ["serve", "--port", "1"], ROOT);
    expect(r).toEqual({ ok: true, argv: [NODE, "/repo/broker/src/main.ts", "serve", "--port", "1"] });
  });
  it("replaces the alias in command and keeps the rest", () => {
    const r = resolveImageCommand("ghcr.io/narad/narad", ["narad", "serve"], ["--x"], ROOT);
    expect(r).toEqual({ ok: true, argv: [NODE, "/repo/broker/src/main.ts", "serve", "--x"] });
  });
  it("maps the operator image", () => {
    const r = resolveImageCommand("ghcr.io/narad/narad-operator:latest", ["narad-operator"], undefined, ROOT);
    expect(r).toEqual({ ok: true, argv: [NODE, "/repo/operator/src/main.ts"] });
  });
  it("runs other commands as given", () => {
    const r = resolveImageCommand("narad.test/echo", ["/bin/sh", "-c"], ["exit 3"], ROOT);
    expect(r).toEqual({ ok: true, argv: ["/bin/sh", "-c", "exit 3"] });
  });
  it("rejects unknown images", () => {
    const r = resolveImageCommand("nginx:1.27", undefined, undefined, ROOT);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(IMAGE_NOT_FOUND_MESSAGE);
  });
});
