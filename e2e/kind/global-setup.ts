// globalSetup of the vitest `kind` project. vitest runs every project's
// globalSetup before the first test of the run, also when kind's group comes
// last (npm test), so it starts nothing: the kind suites' beforeAll start
// dockerd (ensureDocker) when their turn comes. Its teardown, at the end of
// the run, stops a dockerd that this run started (scripts/docker/stop-docker.sh
// stops only a dockerd that ensure-docker.sh recorded).
import { existsSync } from "node:fs";
import { dockerStartedMarker, stopDockerIfStarted } from "./docker.ts";

export default function setup(): () => Promise<void> {
  const runningBefore = existsSync(dockerStartedMarker);
  return async () => {
    const startedByUs = !runningBefore && existsSync(dockerStartedMarker);
    if (startedByUs && process.env["NARAD_KEEP_DOCKER"] !== "1") await stopDockerIfStarted();
  };
}
