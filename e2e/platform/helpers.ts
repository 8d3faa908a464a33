// Small helpers for e2e suites: run kubectl/helm against a cluster, apply
// YAML, and poll for a condition with a timeout message that says what was
// awaited.
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

const DEFAULT_COMMAND_TIMEOUT_MS = 120_000;
const DEFAULT_POLL_INTERVAL_MS = 250;

export interface RunOptions {
  /** Written to the command's stdin. */
  input?: string;
  timeoutMs?: number;
  /** Resolve instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, collecting output; throws with stderr on failure. */
export function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: RunOptions = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const result = { code: code ?? -1, stdout, stderr };
      if (code === 0 || options.allowFailure === true) return resolve(result);
      const why = signal === null ? `exit ${code}` : `signal ${signal} (timeout ${timeoutMs} ms?)`;
      reject(new Error(`${command} ${args.join(" ")} failed (${why}):\n${stderr.trim() || stdout.trim()}`));
    });
    child.stdin.on("error", () => {}); // the command may exit before reading stdin
    child.stdin.end(options.input ?? "");
  });
}

export type CommandRunner = (args: string[], options?: RunOptions) => Promise<RunResult>;

/** A kubectl (or helm) runner bound to one kubeconfig; the caller's KUBECONFIG is ignored. */
export function commandRunner(binary: string, kubeconfigPath: string): CommandRunner {
  const env = { ...process.env, KUBECONFIG: kubeconfigPath };
  return (args, options) => run(binary, args, env, options);
}

/** `kubectl apply -f -` (server-side apply) with the given YAML; returns kubectl's output. */
export async function applyYamlWith(kubectl: CommandRunner, yaml: string): Promise<string> {
  const result = await kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], { input: yaml });
  return result.stdout;
}

export interface WaitForOptions {
  timeoutMs: number;
  /** Completes the sentence "timed out waiting for ...". */
  what: string;
  intervalMs?: number;
}

/**
 * Polls `fn` until it returns a value other than undefined/null/false and
 * returns that value. Errors thrown by `fn` count as "not yet" and the last
 * one is quoted in the timeout error.
 */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: WaitForOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail =
        lastError === undefined
          ? ""
          : `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${detail}`);
    }
    await sleep(options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS);
  }
}
