// scripts/docker/ensure-docker.sh on a machine without Docker and without a
// way to install it: it must fail, saying what is missing (the kind project's
// globalSetup passes that on). Runs in the unit project: nothing is installed
// or started (NARAD_DOCKER_NO_INSTALL=1, a PATH with a docker that never answers
// and no dockerd).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "./docker.ts";

const bin = mkdtempSync(join(tmpdir(), "narad-nodocker-"));
writeFileSync(join(bin, "docker"), "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n");
chmodSync(join(bin, "docker"), 0o755);
afterAll(() => rmSync(bin, { recursive: true, force: true }));

function ensure(env: NodeJS.ProcessEnv) {
  return spawnSync("bash", [join(repoRoot, "scripts/docker/ensure-docker.sh")], {
    // /usr/bin and /bin for coreutils; dockerd and runc live in /usr/sbin, left out.
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: bin, ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
}

describe("ensure-docker.sh without Docker", () => {
  it("fails and names what is missing when it may not install", () => {
    const r = ensure({ NARAD_DOCKER_NO_INSTALL: "1" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("dockerd/runc/jq missing");
  });
});
