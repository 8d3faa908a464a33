// globalSetup of the vitest `kind` project: a Docker engine for the whole run,
// stopped at the end when this run started it (scripts/docker/stop-docker.sh
// stops only a dockerd that ensure-docker.sh recorded).
import { ensureDocker, stopDockerIfStarted } from "./docker.ts";

export default async function setup(): Promise<() => Promise<void>> {
  const t0 = Date.now();
  const { startedByUs } = await ensureDocker();
  process.stderr.write(
    `[kind-setup] docker ready in ${Date.now() - t0} ms (started by this run: ${startedByUs})\n`,
  );
  return async () => {
    if (startedByUs && process.env["NARAD_KEEP_DOCKER"] !== "1") await stopDockerIfStarted();
  };
}
