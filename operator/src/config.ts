import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { DEFAULT_OPERATOR_ADDR, DEFAULT_OPERATOR_NAMESPACE } from "./constants.ts";

// The only reader of the environment and the command line. Returns a frozen,
// validated config. Each flag sets what its variable sets and wins over it
// (the chart's extraArgs reach the container's args); an unknown flag or a
// positional argument is an error, so a typo never passes silently.

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

export interface OperatorConfig {
  /** host and port for /metrics, /healthz, /readyz. */
  listen: { host: string; port: number };
  logLevel: LogLevel;
  leaderElect: boolean;
  /** Empty: all namespaces. */
  watchNamespaces: readonly string[];
  /** Image for clusters whose spec.image is unset. */
  brokerImage: string | undefined;
  /** Namespace of the leader-election Lease. */
  namespace: string;
  /** Lease holder identity. */
  identity: string;
  /** Path of a kubeconfig file, or undefined for loadFromDefault (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig: string | undefined;
}

const LEVELS: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** Command-line flags and the variable each one stands for. */
export const OPERATOR_FLAGS = {
  addr: "NARAD_OPERATOR_ADDR",
  "log-level": "NARAD_OPERATOR_LOG_LEVEL",
  "leader-elect": "NARAD_OPERATOR_LEADER_ELECT",
  "watch-namespaces": "NARAD_OPERATOR_WATCH_NAMESPACES",
  "broker-image": "NARAD_OPERATOR_BROKER_IMAGE",
  kubeconfig: "KUBECONFIG",
} as const;

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  argv: readonly string[] = [],
): OperatorConfig {
  const flags = parseFlags(argv);
  // A setting's source, named in errors: the flag when given, else the variable.
  const get = (flag: keyof typeof OPERATOR_FLAGS): { value: string | undefined; name: string } =>
    flags[flag] !== undefined
      ? { value: flags[flag], name: `--${flag}` }
      : { value: env[OPERATOR_FLAGS[flag]], name: OPERATOR_FLAGS[flag] };
  const addr = get("addr");
  const level = get("log-level");
  const levelValue = (nonEmpty(level.value) ?? "info").toLowerCase();
  if (!LEVELS.includes(levelValue as LogLevel)) {
    throw new Error(`${level.name}=${levelValue}: expected one of ${LEVELS.join(", ")}`);
  }
  const leaderElect = get("leader-elect");
  return Object.freeze({
    listen: parseAddr(nonEmpty(addr.value) ?? DEFAULT_OPERATOR_ADDR, addr.name),
    logLevel: levelValue as LogLevel,
    leaderElect: parseBool(leaderElect.value, true, leaderElect.name),
    watchNamespaces: Object.freeze(
      (get("watch-namespaces").value ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
    ),
    brokerImage: nonEmpty(get("broker-image").value),
    namespace: nonEmpty(env["POD_NAMESPACE"]) ?? DEFAULT_OPERATOR_NAMESPACE,
    identity: nonEmpty(env["POD_NAME"]) ?? `${hostname()}-${process.pid}`,
    kubeconfig: nonEmpty(get("kubeconfig").value),
  });
}

/** `--flag=value` or `--flag value`; `--leader-elect` alone means true. */
function parseFlags(argv: readonly string[]): Partial<Record<keyof typeof OPERATOR_FLAGS, string>> {
  // --leader-elect without a value: parseArgs has no optional values, so expand it first.
  const args = argv.map((a) => (a === "--leader-elect" ? "--leader-elect=true" : a));
  const options = Object.fromEntries(
    Object.keys(OPERATOR_FLAGS).map((f) => [f, { type: "string" as const }]),
  );
  try {
    const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
    return values as Partial<Record<keyof typeof OPERATOR_FLAGS, string>>;
  } catch (err) {
    const known = Object.keys(OPERATOR_FLAGS)
      .map((f) => `--${f}`)
      .join(", ");
    throw new Error(`narad-operator: ${(err as Error).message} (flags: ${known})`);
  }
}

/** "host:port", "[v6]:port" or ":port" (all interfaces). */
export function parseAddr(addr: string, name = "NARAD_OPERATOR_ADDR"): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = Number(m?.[3]);
  if (m === null || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`${name}=${addr}: expected host:port`);
  }
  return { host: m[1] ?? (m[2] || "0.0.0.0"), port };
}

function parseBool(v: string | undefined, dflt: boolean, name: string): boolean {
  const s = nonEmpty(v)?.toLowerCase();
  if (s === undefined) return dflt;
  if (["1", "true", "yes", "on"].includes(s)) return true;
  if (["0", "false", "no", "off"].includes(s)) return false;
  throw new Error(`${name}=${v}: expected true or false`);
}

function nonEmpty(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}
