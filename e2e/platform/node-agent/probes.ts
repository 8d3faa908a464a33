// Runs one probe (httpGet, tcpSocket or exec) on its period and reports when
// its verdict flips. Threshold bookkeeping is in probe-state.ts.

import { spawn } from "node:child_process";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { V1Container, V1Probe } from "@kubernetes/client-node";
import {
  initialProbeState,
  observeProbe,
  type ProbeKind,
  type ProbeResult,
  type ProbeState,
  type ProbeTiming,
  probeTiming,
} from "./probe-state.ts";

export interface ProbeTarget {
  readonly podIP: string;
  readonly container: V1Container;
  readonly pid: number;
  readonly env: Readonly<Record<string, string>>;
}

/** Resolves a named port against the container's ports. */
export function resolvePort(port: number | string | undefined, container: V1Container): number | null {
  if (typeof port === "number") return port;
  if (port === undefined) return null;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (container.ports ?? []).find((p) => p.name === port);
  return named ? named.containerPort : null;
}

function httpProbe(
  probe: NonNullable<V1Probe["httpGet"]>,
  t: ProbeTarget,
  timeoutMs: number,
): Promise<boolean> {
  const port = resolvePort(probe.port as number | string, t.container);
  if (port === null) return Promise.resolve(false);
  const mod = probe.scheme === "HTTPS" ? https : http;
  const headers: Record<string, string> = { "user-agent": "narad-node-agent/probe" };
  for (const h of probe.httpHeaders ?? []) headers[h.name] = h.value;
  return new Promise((resolve) => {
    const req = mod.request(
      {
        host: probe.host || t.podIP,
        port,
        path: probe.path ?? "/",
        method: "GET",
        headers,
        timeout: timeoutMs,
        rejectUnauthorized: false,
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 400);
      },
    );
    req.on("timeout", () => req.destroy(new Error("probe timeout")));
    req.on("error", () => resolve(false));
    req.end();
  });
}

function tcpProbe(
  probe: NonNullable<V1Probe["tcpSocket"]>,
  t: ProbeTarget,
  timeoutMs: number,
): Promise<boolean> {
  const port = resolvePort(probe.port as number | string, t.container);
  if (port === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    const sock = net.connect({ host: probe.host || t.podIP, port, timeout: timeoutMs });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("timeout", () => {
      sock.destroy();
      resolve(false);
    });
    sock.once("error", () => resolve(false));
  });
}

/** Runs the command inside the container's mount namespace (nsenter) with its environment. */
export function execInContainer(
  command: readonly string[],
  pid: number,
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<boolean> {
  if (command.length === 0) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn("nsenter", ["--target", String(pid), "--mount", "--", ...command], {
      env,
      stdio: "ignore",
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
}

export function runProbeOnce(probe: V1Probe, t: ProbeTarget, timeoutMs: number): Promise<boolean> {
  if (probe.httpGet) return httpProbe(probe.httpGet, t, timeoutMs);
  if (probe.tcpSocket) return tcpProbe(probe.tcpSocket, t, timeoutMs);
  if (probe.exec) return execInContainer(probe.exec.command ?? [], t.pid, t.env, timeoutMs);
  return Promise.resolve(true);
}

export class ProbeRunner {
  readonly kind: ProbeKind;
  readonly #probe: V1Probe;
  readonly #timing: ProbeTiming;
  readonly #target: ProbeTarget;
  readonly #onChange: (result: ProbeResult) => void;
  #state: ProbeState;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  constructor(kind: ProbeKind, probe: V1Probe, target: ProbeTarget, onChange: (result: ProbeResult) => void) {
    this.kind = kind;
    this.#probe = probe;
    this.#timing = probeTiming(probe);
    this.#target = target;
    this.#onChange = onChange;
    this.#state = initialProbeState(kind);
  }

  get result(): ProbeResult {
    return this.#state.result;
  }

  start(): void {
    this.#schedule(this.#timing.initialDelayMs);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#tick(), ms);
  }

  async #tick(): Promise<void> {
    const ok = await runProbeOnce(this.#probe, this.#target, this.#timing.timeoutMs);
    if (this.#stopped) return;
    const before = this.#state.result;
    this.#state = observeProbe(this.#state, ok, this.#timing);
    if (this.#state.result !== before) this.#onChange(this.#state.result);
    // A passed startup probe has done its job.
    if (this.kind === "startup" && this.#state.result === "success") return;
    this.#schedule(this.#timing.periodMs);
  }
}
