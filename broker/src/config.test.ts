import { describe, expect, it } from "vitest";
import { ConfigError, defaultAuthMode, loadConfig } from "./config.ts";

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
  it("security flags: auth defaults per metastore, files and TLS dir from flags/env", () => {
    const c = loadConfig(["--dev"], {}, "h");
    expect(c.security).toEqual({
      auth: defaultAuthMode("file"),
      authFile: undefined,
      clusterSecretFile: undefined,
      tlsDir: undefined,
    });
    const env = {
      NARAD_AUTH: "on",
      NARAD_AUTH_FILE: "/s/users.json",
      NARAD_CLUSTER_SECRET_FILE: "/c/secret",
    };
    const d = loadConfig(["--tls-dir", "/tls"], env, "h");
    expect(d.security).toEqual({
      auth: "on",
      authFile: "/s/users.json",
      clusterSecretFile: "/c/secret",
      tlsDir: "/tls",
    });
    expect(() => loadConfig(["--auth", "maybe"], {}, "h")).toThrow(/--auth must be on or off/);
  });
  it("auth on with the kubernetes metastore needs a users file", () => {
    const kube = ["--metastore", "kubernetes", "--cluster-name", "c1", "--auth", "on"];
    expect(() => loadConfig(kube, {}, "h")).toThrow(/needs --auth-file/);
    expect(loadConfig([...kube, "--auth-file", "/u.json"], {}, "h").security.auth).toBe("on");
  });
});
