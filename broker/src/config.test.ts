import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.ts";

describe("loadConfig", () => {
  it("--dev binds loopback and keeps data under ./data", () => {
    const c = loadConfig(["--dev"], {}, "host1");
    expect(c.http).toEqual({ host: "127.0.0.1", port: 7942 });
    expect(c.dataDir).toBe("./data");
    expect(c.nodeId).toBe("host1");
    expect(c.metastore).toBe("file");
  });
  it("flags beat environment variables, which beat defaults", () => {
    const env = { NARAD_HTTP_ADDR: "127.0.0.2:9000", NARAD_DATA_DIR: "/env", NARAD_NODE_ID: "n-env" };
    const c = loadConfig(["--addr", "127.0.0.3:9100"], env, "h");
    expect(c.http).toEqual({ host: "127.0.0.3", port: 9100 });
    expect(c.dataDir).toBe("/env");
    expect(c.nodeId).toBe("n-env");
  });
  it(":PORT listens on every interface", () => {
    expect(loadConfig(["--addr", ":8000"], {}, "h").http).toEqual({ host: "0.0.0.0", port: 8000 });
  });
  it.each([
    [["--addr", "nope"], /HOST:PORT/],
    [["--addr", "h:99999"], /invalid port/],
    [["--log-level", "loud"], /log-level/],
    [["--bogus"], /Unknown option/],
    [["--drain-timeout-ms=-1"], /non-negative integer/],
    [["--topic-partitions", "500"], /topic-partitions/],
  ])("rejects %j with a clear message", (argv, message) => {
    expect(() => loadConfig(argv, {}, "h")).toThrow(ConfigError);
    expect(() => loadConfig(argv, {}, "h")).toThrow(message);
  });
});
