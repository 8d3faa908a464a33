import { hostname } from "node:os";
import { DEFAULT_OPERATOR_ADDR, DEFAULT_OPERATOR_NAMESPACE } from "./constants.ts";

// The only reader of the environment. Returns a frozen, validated config.

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

export function loadConfig(env: Record<string, string | undefined> = process.env): OperatorConfig {
  const addr = nonEmpty(env["NARAD_OPERATOR_ADDR"]) ?? DEFAULT_OPERATOR_ADDR;
  const level = (nonEmpty(env["NARAD_OPERATOR_LOG_LEVEL"]) ?? "info").toLowerCase();
  if (!LEVELS.includes(level as LogLevel)) {
    throw new Error(`NARAD_OPERATOR_LOG_LEVEL=${level}: expected one of ${LEVELS.join(", ")}`);
  }
  return Object.freeze({
    listen: parseAddr(addr),
    logLevel: level as LogLevel,
    leaderElect: parseBool(env["NARAD_OPERATOR_LEADER_ELECT"], true, "NARAD_OPERATOR_LEADER_ELECT"),
    watchNamespaces: Object.freeze(
      (env["NARAD_OPERATOR_WATCH_NAMESPACES"] ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
    ),
    brokerImage: nonEmpty(env["NARAD_OPERATOR_BROKER_IMAGE"]),
    namespace: nonEmpty(env["POD_NAMESPACE"]) ?? DEFAULT_OPERATOR_NAMESPACE,
    identity: nonEmpty(env["POD_NAME"]) ?? `${hostname()}-${process.pid}`,
    kubeconfig: nonEmpty(env["KUBECONFIG"]),
  });
}

/** "host:port", "[v6]:port" or ":port" (all interfaces). */
export function parseAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = Number(m?.[3]);
  if (m === null || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`NARAD_OPERATOR_ADDR=${addr}: expected host:port`);
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
