import { describe, expect, it } from "vitest";
import { loadConfig, parseAddr } from "./config.ts";

describe("loadConfig", () => {
  it("defaults", () => {
    const c = loadConfig({});
    expect(c.listen).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(c.logLevel).toBe("info");
    expect(c.leaderElect).toBe(true);
    expect(c.watchNamespaces).toEqual([]);
    expect(c.brokerImage).toBeUndefined();
    expect(c.namespace).toBe("narad-system");
    expect(c.identity).toMatch(/-\d+$/);
    expect(Object.isFrozen(c)).toBe(true);
  });
  it("reads every variable", () => {
    const c = loadConfig({
      NARAD_OPERATOR_ADDR: "127.1.2.3:9090",
      NARAD_OPERATOR_LOG_LEVEL: "DEBUG",
      NARAD_OPERATOR_LEADER_ELECT: "false",
      NARAD_OPERATOR_WATCH_NAMESPACES: "a, b,,c",
      NARAD_OPERATOR_BROKER_IMAGE: "img:1",
      POD_NAMESPACE: "ops",
      POD_NAME: "op-0",
      KUBECONFIG: "/tmp/kc",
    });
    expect(c).toMatchObject({
      listen: { host: "127.1.2.3", port: 9090 },
      logLevel: "debug",
      leaderElect: false,
      watchNamespaces: ["a", "b", "c"],
      brokerImage: "img:1",
      namespace: "ops",
      identity: "op-0",
      kubeconfig: "/tmp/kc",
    });
  });
  it("rejects bad values with the variable's name", () => {
    expect(() => loadConfig({ NARAD_OPERATOR_LEADER_ELECT: "maybe" })).toThrow(/NARAD_OPERATOR_LEADER_ELECT/);
    expect(() => loadConfig({ NARAD_OPERATOR_LOG_LEVEL: "loud" })).toThrow(/NARAD_OPERATOR_LOG_LEVEL/);
    expect(() => loadConfig({ NARAD_OPERATOR_ADDR: "nope" })).toThrow(/NARAD_OPERATOR_ADDR/);
  });
  it("takes every setting as a flag too, the flag winning over its variable", () => {
    const c = loadConfig({ NARAD_OPERATOR_LOG_LEVEL: "warn", NARAD_OPERATOR_BROKER_IMAGE: "img:env" }, [
      "--log-level=debug",
      "--broker-image",
      "img:flag",
      "--addr=:9000",
      "--leader-elect=false",
      "--watch-namespaces=a,b",
      "--kubeconfig=/kc",
    ]);
    expect(c).toMatchObject({
      listen: { host: "0.0.0.0", port: 9000 },
      logLevel: "debug",
      leaderElect: false,
      watchNamespaces: ["a", "b"],
      brokerImage: "img:flag",
      kubeconfig: "/kc",
    });
    expect(loadConfig({ NARAD_OPERATOR_LEADER_ELECT: "false" }, ["--leader-elect"]).leaderElect).toBe(true);
    // Unset flags leave the variables in charge.
    expect(loadConfig({ NARAD_OPERATOR_LOG_LEVEL: "warn" }, []).logLevel).toBe("warn");
  });
  it("refuses an unknown flag or a positional argument, and names a bad flag value by its flag", () => {
    expect(() => loadConfig({}, ["--log-levl=debug"])).toThrow(/--log-levl.*flags: --addr, --log-level/);
    expect(() => loadConfig({}, ["serve"])).toThrow(/serve/);
    expect(() => loadConfig({}, ["--log-level=loud"])).toThrow(/^--log-level=loud/);
    expect(() => loadConfig({}, ["--addr=nope"])).toThrow(/^--addr=nope/);
    expect(() => loadConfig({}, ["--leader-elect=maybe"])).toThrow(/^--leader-elect=maybe/);
  });
  it("parses addresses", () => {
    expect(parseAddr(":8080")).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(parseAddr("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
  });
});
