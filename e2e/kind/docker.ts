// Docker helpers for the kind project (e2e/kind/*.kind.test.ts): the engine
// comes from scripts/docker/ensure-docker.sh, Narad's images from
// scripts/docker/build-images.sh.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const brokerImage = process.env["NARAD_BROKER_IMAGE"] ?? "ghcr.io/narad/narad:0.1.0";
export const operatorImage = process.env["NARAD_OPERATOR_IMAGE"] ?? "ghcr.io/narad/narad-operator:0.1.0";
/** Written by ensure-docker.sh when it started dockerd (stop-docker.sh stops only that one). */
export const dockerStartedMarker = "/run/narad-docker/started";

/** Runs a command, its output streamed to stderr with a prefix; rejects with the tail of it on failure. */
export function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; prefix?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let tail = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      const s = d.toString();
      tail = (tail + s).slice(-4000);
      if (opts.prefix !== undefined)
        for (const line of s.split("\n")) if (line !== "") process.stderr.write(`[${opts.prefix}] ${line}\n`);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(" ")} exited ${code}:\n${tail}`));
    });
  });
}

export async function docker(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync("docker", args, { maxBuffer: 64 << 20 });
  return stdout.trim();
}

/** A container's log, stdout and stderr together. */
export async function dockerLogs(container: string): Promise<string> {
  const { stdout, stderr } = await execFileAsync("docker", ["logs", container], { maxBuffer: 64 << 20 });
  return `${stdout}${stderr}`;
}

/** Makes dockerd answer (installing docker.io when it can), or throws saying what is missing. */
export async function ensureDocker(): Promise<{ startedByUs: boolean }> {
  const before = existsSync(dockerStartedMarker);
  try {
    await run("bash", [join(repoRoot, "scripts/docker/ensure-docker.sh")], { prefix: "ensure-docker" });
  } catch (err) {
    throw new Error(
      "The kind suites need a Docker engine: none answers and scripts/docker/ensure-docker.sh could not " +
        `install or start one (it needs Debian's docker.io via apt-get as root).\n${(err as Error).message}`,
    );
  }
  return { startedByUs: !before && existsSync(dockerStartedMarker) };
}

export async function stopDockerIfStarted(): Promise<void> {
  await run("bash", [join(repoRoot, "scripts/docker/stop-docker.sh")], { prefix: "stop-docker" });
}

export async function buildImages(): Promise<void> {
  await run("bash", [join(repoRoot, "scripts/docker/build-images.sh")], { prefix: "build-images" });
}
