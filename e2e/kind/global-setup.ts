// globalSetup of the vitest `kind` project. vitest runs every project's
// globalSetup before the first test of the run, also when kind's group comes
// last (npm test), so it starts nothing: the kind suites' beforeAll start
// dockerd (ensureDocker) and bring the kind cluster up (createKindCluster)
// when their turn comes. The suites share that cluster (NARAD_KIND_RUN_DIR,
// see cluster.ts): one `up.sh` creates it, the later suites reuse it. The
// teardown, at the end of the run, deletes it, then stops a dockerd that this
// run started (scripts/docker/stop-docker.sh stops only a dockerd that
// ensure-docker.sh recorded).
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deleteSharedKindClusters, shareKindClusters } from "./cluster.ts";
import { dockerStartedMarker, stopDockerIfStarted } from "./docker.ts";

export default function setup(): () => Promise<void> {
  const runningBefore = existsSync(dockerStartedMarker);
  const dir = mkdtempSync(join(tmpdir(), "narad-kind-run-"));
  shareKindClusters(dir);
  return async () => {
    await deleteSharedKindClusters(dir);
    const startedByUs = !runningBefore && existsSync(dockerStartedMarker);
    if (startedByUs && process.env["NARAD_KEEP_DOCKER"] !== "1") await stopDockerIfStarted();
  };
}
