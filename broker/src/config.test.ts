import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, defaultAuthMode, loadConfig, usage } from "./config.ts";

function writeConfigFile(settings: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), "narad-config-")), "config.json");
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

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
  it("acks=all wait: 15 s by default, from flag, env or config file; 0 is refused", () => {
    expect(loadConfig([], {}, "h").acksAllTimeoutMs).toBe(15_000);
    expect(loadConfig([], { NARAD_ACKS_ALL_TIMEOUT_MS: "60000" }, "h").acksAllTimeoutMs).toBe(60_000);
    expect(
      loadConfig(["--acks-all-timeout-ms", "500"], { NARAD_ACKS_ALL_TIMEOUT_MS: "60000" }, "h")
        .acksAllTimeoutMs,
    ).toBe(500);
    const file = writeConfigFile({ acksAllTimeoutMs: 2_000 });
    expect(loadConfig(["--config", file], {}, "h").acksAllTimeoutMs).toBe(2_000);
    expect(() => loadConfig(["--acks-all-timeout-ms", "0"], {}, "h")).toThrow(
      /acks-all-timeout-ms must be at least 1/,
    );
    expect(usage).toContain("--acks-all-timeout-ms");
  });
  it("producer fence lease: 10 s by default, from flag, env or config file; 0 and above 60 s are refused", () => {
    expect(loadConfig([], {}, "h").producerFenceLeaseMs).toBe(10_000);
    expect(loadConfig([], { NARAD_PRODUCER_FENCE_LEASE_MS: "3000" }, "h").producerFenceLeaseMs).toBe(3_000);
    expect(
      loadConfig(["--producer-fence-lease-ms", "500"], { NARAD_PRODUCER_FENCE_LEASE_MS: "3000" }, "h")
        .producerFenceLeaseMs,
    ).toBe(500);
    const file = writeConfigFile({ producerFenceLeaseMs: 2_000 });
    expect(loadConfig(["--config", file], {}, "h").producerFenceLeaseMs).toBe(2_000);
    expect(() => loadConfig(["--producer-fence-lease-ms", "0"], {}, "h")).toThrow(
      /producer-fence-lease-ms must be at least 1/,
    );
    expect(() => loadConfig(["--producer-fence-lease-ms", "60001"], {}, "h")).toThrow(
      /producer-fence-lease-ms must be at most 60000/,
    );
    expect(usage).toContain("--producer-fence-lease-ms");
    expect(usage).toContain("NARAD_PRODUCER_FENCE_LEASE_MS");
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
  it("topic defaults and the consume wait are settings, also under Narad's variable names", () => {
    const d = loadConfig([], {}, "h");
    expect(d.topicDefaults).toMatchObject({
      partitions: 3,
      partitionsMax: 108,
      retentionMs: 7 * 24 * 3600 * 1000,
      visibilityTimeoutMs: 30_000,
      maxInFlight: 1024,
      maxAckedAhead: 1024,
    });
    expect(d.consume.maxWaitMs).toBe(10_000);
    const ours = loadConfig(
      [
        "--topic-partitions=6",
        "--topic-max-partitions=200",
        "--topic-retention-ms=3600000",
        "--topic-visibility-timeout-ms=5000",
        "--topic-max-in-flight=8",
        "--topic-max-acked-ahead=16",
        "--max-consume-wait=2s",
      ],
      {},
      "h",
    );
    expect(ours.topicDefaults).toMatchObject({
      partitions: 6,
      partitionsMax: 200,
      retentionMs: 3_600_000,
      visibilityTimeoutMs: 5000,
      maxInFlight: 8,
      maxAckedAhead: 16,
    });
    expect(ours.consume.maxWaitMs).toBe(2000);
    const narad = loadConfig(
      [],
      {
        NARAD_TOPIC_DEFAULT_PARTITIONS: "5",
        NARAD_TOPIC_MAX_PARTITIONS: "128",
        NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS: "7200000",
        NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS: "9000",
        NARAD_TOPIC_DEFAULT_MAX_IN_FLIGHT_PER_PARTITION: "4",
        NARAD_TOPIC_DEFAULT_MAX_ACKED_AHEAD_PER_PARTITION: "32",
        NARAD_HTTP_MAX_CONSUME_WAIT: "1m2s",
      },
      "h",
    );
    expect(narad.topicDefaults).toMatchObject({
      partitions: 5,
      partitionsMax: 128,
      retentionMs: 7_200_000,
      visibilityTimeoutMs: 9000,
      maxInFlight: 4,
      maxAckedAhead: 32,
    });
    expect(narad.consume.maxWaitMs).toBe(62_000);
    // Our variable wins over Narad's; a bare number is milliseconds.
    const both = loadConfig(
      [],
      { NARAD_TOPIC_PARTITIONS: "2", NARAD_TOPIC_DEFAULT_PARTITIONS: "5", NARAD_MAX_CONSUME_WAIT: "250" },
      "h",
    );
    expect(both.topicDefaults.partitions).toBe(2);
    expect(both.consume.maxWaitMs).toBe(250);
    const file = loadConfig(
      ["--config", writeConfigFile({ topicMaxPartitions: 4, maxConsumeWait: "3s" })],
      {},
      "h",
    );
    expect(file.topicDefaults.partitionsMax).toBe(4);
    expect(file.consume.maxWaitMs).toBe(3000);
  });
  it.each([
    [["--topic-max-partitions=0"], /topic-max-partitions must be between/],
    [["--topic-partitions=10", "--topic-max-partitions=8"], /topic-partitions must be between 1 and 8/],
    [["--topic-visibility-timeout-ms=0"], /topic-visibility-timeout-ms must be at least 1/],
    [["--max-consume-wait=soon"], /max-consume-wait must be a duration/],
    [["--max-consume-wait=-1s"], /max-consume-wait must be a duration/],
    [["--max-consume-wait=2m"], /max-consume-wait must be below --idle-timeout-ms/],
  ])("refuses topic defaults %j", (argv, message) => {
    expect(() => loadConfig(argv, {}, "h")).toThrow(message);
  });
  it("security flags: auth defaults per metastore, files and TLS dir from flags/env", () => {
    const c = loadConfig(["--dev"], {}, "h");
    expect(c.security).toEqual({
      auth: defaultAuthMode("file"),
      authFile: undefined,
      clusterSecretFile: undefined,
      tlsDir: undefined,
      metricsAuth: false,
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
      // /metrics follows --auth unless --metrics-auth says otherwise.
      metricsAuth: true,
    });
    expect(() => loadConfig(["--auth", "maybe"], {}, "h")).toThrow(/--auth must be on or off/);
  });
  it("auth is closed by default in cluster mode and open on a single node", () => {
    expect(defaultAuthMode("kubernetes")).toBe("on");
    expect(defaultAuthMode("file")).toBe("off");
    const kube = ["--metastore", "kubernetes", "--cluster-name", "c1"];
    expect(() => loadConfig(kube, {}, "h")).toThrow(/needs --auth-file/);
    expect(loadConfig([...kube, "--auth-file", "/u.json"], {}, "h").security.auth).toBe("on");
    expect(loadConfig(["--dev"], {}, "h").security.auth).toBe("off");
  });
  it("auth on with the kubernetes metastore needs a users file", () => {
    const kube = ["--metastore", "kubernetes", "--cluster-name", "c1", "--auth", "on"];
    expect(() => loadConfig(kube, {}, "h")).toThrow(/needs --auth-file/);
    expect(loadConfig([...kube, "--auth-file", "/u.json"], {}, "h").security.auth).toBe("on");
  });
});

describe("overload settings", () => {
  it("defaults: 128 MiB budget, 15 s admission wait, no rate limits", () => {
    const c = loadConfig([], {}, "h");
    expect(c.admission).toEqual({ budgetBytes: 128 * 1024 * 1024, timeoutMs: 15_000 });
    expect(c.rateLimits).toEqual({ topic: undefined, client: undefined });
  });
  it("reads flags and env; a burst defaults to one second's worth; fractional rates are allowed", () => {
    const c = loadConfig(
      ["--produce-memory-budget", "1048576", "--topic-rate-limit", "0.5", "--client-rate-limit", "100"],
      { NARAD_ADMISSION_TIMEOUT_MS: "2000", NARAD_CLIENT_RATE_BURST: "300" },
      "h",
    );
    expect(c.admission).toEqual({ budgetBytes: 1048576, timeoutMs: 2000 });
    expect(c.rateLimits.topic).toEqual({ rate: 0.5, burst: 1 });
    expect(c.rateLimits.client).toEqual({ rate: 100, burst: 300 });
  });
  it.each([
    [["--produce-memory-budget", "0"], /produce-memory-budget/],
    [["--admission-timeout-ms", "0"], /admission-timeout-ms/],
    [["--topic-rate-limit", "fast"], /topic-rate-limit must be a non-negative number/],
    [["--client-rate-limit", "5", "--client-rate-burst", "0"], /client-rate-burst must be at least 1/],
    [["--dispatch-max-pass-bytes", "0"], /dispatch-max-pass-bytes/],
  ])("rejects %j", (argv, message) => {
    expect(() => loadConfig(argv, {}, "h")).toThrow(message);
  });
  it("lists the flags in narad help", async () => {
    const { usage } = await import("./config.ts");
    for (const flag of [
      "--produce-memory-budget",
      "--admission-timeout-ms",
      "--topic-rate-limit",
      "--client-rate-burst",
    ]) {
      expect(usage).toContain(flag);
    }
  });
});

describe("limits against hostile clients (issue #14)", () => {
  it("have defaults, can be set by flag and env, and are listed in the usage text", () => {
    const c = loadConfig([], {}, "h");
    expect(c.limits).toMatchObject({ batchMaxRecords: 100_000, maxTopics: 1_000, maxPartitions: 4_096 });
    const d = loadConfig(
      ["--batch-max-records", "5", "--metrics-auth", "off"],
      { NARAD_MAX_OPEN_LOGS: "7" },
      "h",
    );
    expect(d.limits.batchMaxRecords).toBe(5);
    expect(d.limits.maxOpenLogs).toBe(7);
    expect(d.security.metricsAuth).toBe(false);
    for (const flag of ["--batch-max-records", "--max-partitions", "--body-min-rate", "--login-interval-ms"])
      expect(usage).toContain(flag);
    expect(() => loadConfig(["--max-topics", "0"], {}, "h")).toThrow(/maxTopics must be at least 1/);
  });
});
