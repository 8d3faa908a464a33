// Command-line flags (pure parsing, so main.ts only wires things up).

import path from "node:path";
import { parseArgs } from "node:util";
import { parsePodIpPrefix } from "./ip-allocator.ts";

export interface AgentConfig {
  readonly kubeconfig: string;
  readonly nodeName: string;
  readonly stateDir: string;
  readonly podIpPrefix: string;
  /** How long pods get after SIGTERM when the agent itself is stopped. */
  readonly shutdownGraceMs: number;
}

export const USAGE =
  "usage: node-agent --kubeconfig <path> --node-name <name> --state-dir <dir> --pod-ip-prefix 127.<N> [--shutdown-grace-ms 5000]";
const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;

export function parseConfig(argv: readonly string[]): AgentConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: "string" },
      "node-name": { type: "string" },
      "state-dir": { type: "string" },
      "pod-ip-prefix": { type: "string" },
      "shutdown-grace-ms": { type: "string" },
    },
    strict: true,
  });
  const need = (k: keyof typeof values): string => {
    const v = values[k];
    if (typeof v !== "string" || v === "") throw new Error(`missing --${k}\n${USAGE}`);
    return v;
  };
  const grace = values["shutdown-grace-ms"] ? Number(values["shutdown-grace-ms"]) : DEFAULT_SHUTDOWN_GRACE_MS;
  if (!Number.isFinite(grace) || grace < 0) throw new Error(`bad --shutdown-grace-ms\n${USAGE}`);
  return {
    kubeconfig: path.resolve(need("kubeconfig")),
    nodeName: need("node-name"),
    stateDir: path.resolve(need("state-dir")),
    podIpPrefix: parsePodIpPrefix(need("pod-ip-prefix")),
    shutdownGraceMs: grace,
  };
}

/** KUBERNETES_SERVICE_HOST/PORT for pods, from the kubeconfig's server URL. */
export function apiEndpoint(server: string): { host: string; port: string } {
  const u = new URL(server);
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  return { host, port: u.port || (u.protocol === "https:" ? "443" : "80") };
}
