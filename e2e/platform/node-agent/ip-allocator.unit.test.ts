import { describe, expect, it } from "vitest";
import { IpAllocator, nodeIp, parsePodIpPrefix } from "./ip-allocator.ts";

describe("IpAllocator", () => {
  it("hands out distinct addresses after the node address", () => {
    const a = new IpAllocator("127.42");
    expect(nodeIp("127.42")).toBe("127.42.0.1");
    expect(a.allocate()).toBe("127.42.0.2");
    expect(a.allocate()).toBe("127.42.0.3");
  });
  it("does not immediately reuse a released address", () => {
    const a = new IpAllocator("127.42");
    const first = a.allocate();
    a.release(first);
    expect(a.allocate()).not.toBe(first);
  });
  it("re-claims known addresses and skips them afterwards", () => {
    const a = new IpAllocator("127.42");
    expect(a.claim("127.42.0.9")).toBe(true);
    expect(a.claim("127.42.0.9")).toBe(false);
    expect(a.claim("127.43.0.9")).toBe(false);
    expect(a.allocate()).toBe("127.42.0.10");
  });
  it("crosses the third octet", () => {
    const a = new IpAllocator("127.1");
    a.claim("127.1.0.255");
    expect(a.allocate()).toBe("127.1.1.0");
  });
  it("validates the prefix", () => {
    expect(parsePodIpPrefix("127.7")).toBe("127.7");
    expect(() => parsePodIpPrefix("10.1")).toThrow();
    expect(() => parsePodIpPrefix("127.300")).toThrow();
  });
});
