// The broker image as a user runs it with plain Docker: read-only root file
// system, an arbitrary non-root uid (1000, gid 0), a named volume for the data
// dir. Single-node smoke test (create a topic, produce -> 202, read it back),
// then SIGTERM: exit 0 well within the grace period.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brokerImage, buildImages, docker, dockerLogs, ensureDocker, operatorImage } from "./docker.ts";

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const volume = `narad-smoke-${suffix}`;
const container = `narad-smoke-${suffix}`;
let base = "";

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(250);
  }
  throw new Error(`${url}/readyz not ready after ${timeoutMs} ms: ${last}`);
}

describe("broker image (docker run)", () => {
  beforeAll(async () => {
    const t0 = Date.now();
    await ensureDocker();
    await buildImages();
    process.stderr.write(`[broker-image] images ready in ${Date.now() - t0} ms\n`);
    await docker(["volume", "create", volume]);
    await docker([
      "run",
      "-d",
      "--name",
      container,
      "--read-only",
      "--user",
      "1000",
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "-v",
      `${volume}:/var/lib/narad`,
      "-p",
      "127.0.0.1::7942",
      brokerImage,
      "serve",
    ]);
    const port = (await docker(["port", container, "7942/tcp"])).split("\n")[0]?.split(":").pop();
    base = `http://127.0.0.1:${port}`;
    await waitReady(base, 60_000);
  }, 900_000);

  afterAll(async () => {
    await docker(["rm", "-f", container]).catch(() => {});
    await docker(["volume", "rm", "-f", volume]).catch(() => {});
  });

  it("images: non-root user, OCI labels, no shell", async () => {
    for (const image of [brokerImage, operatorImage]) {
      const cfg = JSON.parse(await docker(["image", "inspect", image, "--format", "{{json .Config}}"])) as {
        User: string;
        Labels: Record<string, string>;
      };
      expect(cfg.User).toBe("10001:0");
      expect(cfg.Labels["org.opencontainers.image.version"]).toBe("0.1.0");
      expect(cfg.Labels["org.opencontainers.image.revision"]).toMatch(/^[0-9a-f]{7,}|unknown$/);
    }
    // Only the local base is known to be shell-less (node:24-slim has /bin/sh).
    if ((process.env["NARAD_IMAGES"] ?? "local") === "local")
      await expect(
        docker(["run", "--rm", "--entrypoint", "/bin/sh", brokerImage, "-c", "true"]),
      ).rejects.toThrow();
  });

  it("creates a topic, accepts a produce with 202 and reads it back", async () => {
    const created = await fetch(`${base}/v1/topics`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "smoke", partitions: 1 }),
    });
    expect([200, 201]).toContain(created.status);
    const produced = await fetch(`${base}/v1/topics/smoke/produce?partition=0`, {
      method: "POST",
      body: "hello narad",
    });
    expect(produced.status).toBe(202);
    let body = "";
    for (let i = 0; i < 80 && !body.includes("hello narad"); i++) {
      const res = await fetch(`${base}/v1/topics/smoke/records?partition=0&offset=0`);
      body = await res.text();
      if (!body.includes("hello narad")) await sleep(250);
    }
    expect(body).toContain("hello narad");
    // The data files belong to the container's uid, on the volume.
    const owners = await docker([
      "run",
      "--rm",
      "--read-only",
      "--entrypoint",
      "/usr/local/bin/node",
      "-v",
      `${volume}:/d`,
      brokerImage,
      "-e",
      "const fs=require('fs');const s=new Set();for(const f of fs.readdirSync('/d',{recursive:true}))s.add(fs.statSync('/d/'+f).uid);console.log([...s].join(','))",
    ]);
    expect(owners).toBe("1000");
  });

  it("SIGTERM while the broker is still starting: exits 0 at once, not after the grace period", async () => {
    // Node is PID 1: without a handler the kernel drops SIGTERM, and the broker
    // installed its handler only once it was ready (seconds on a busy node).
    const name = `${container}-early`;
    await docker([
      "run",
      "-d",
      "--name",
      name,
      "--read-only",
      "--user",
      "1000",
      "--tmpfs",
      "/var/lib/narad:uid=1000",
      brokerImage,
      "serve",
    ]);
    try {
      await sleep(1500);
      const readyBefore = (await dockerLogs(name).catch(() => "")).includes("narad ready");
      const t0 = Date.now();
      await docker(["stop", "-t", "30", name]);
      const elapsed = Date.now() - t0;
      const state = JSON.parse(await docker(["inspect", name, "--format", "{{json .State}}"])) as {
        ExitCode: number;
      };
      process.stderr.write(
        `[broker-image] early stop took ${elapsed} ms (ready before the signal: ${readyBefore})\n`,
      );
      // Before the fix: 30.8 s (the whole grace) and exit 137 (SIGKILL). With it,
      // the handler runs at the first event-loop turn: immediate on an idle
      // machine, but module evaluation blocks the loop for seconds under heavy
      // load (14 s at load average 23 on 2 cores), hence the loose bound.
      expect(state.ExitCode).toBe(0);
      expect(elapsed).toBeLessThan(25_000);
      if (!readyBefore) expect(await dockerLogs(name)).toContain("before it was ready");
    } finally {
      await docker(["rm", "-f", name]).catch(() => {});
    }
  });

  it("operator image: SIGTERM while it is still starting exits 0, not after the grace period", async () => {
    // Same PID 1 problem: main.ts registered its handler after ~10-25 s of module loading here.
    const name = `${container}-operator`;
    await docker(["run", "-d", "--name", name, "--read-only", "--user", "1000", operatorImage]);
    try {
      await sleep(1500);
      const t0 = Date.now();
      await docker(["stop", "-t", "30", name]);
      const elapsed = Date.now() - t0;
      const state = JSON.parse(await docker(["inspect", name, "--format", "{{json .State}}"])) as {
        ExitCode: number;
      };
      process.stderr.write(`[broker-image] operator early stop took ${elapsed} ms\n`);
      // Before the fix: 30.9 s and exit 137.
      expect(state.ExitCode).toBe(0);
      expect(elapsed).toBeLessThan(25_000);
    } finally {
      await docker(["rm", "-f", name]).catch(() => {});
    }
  });

  it("SIGTERM: drains and exits 0 within the grace period", async () => {
    const t0 = Date.now();
    await docker(["stop", "-t", "30", container]);
    const elapsed = Date.now() - t0;
    const state = JSON.parse(await docker(["inspect", container, "--format", "{{json .State}}"])) as {
      ExitCode: number;
    };
    expect(state.ExitCode).toBe(0);
    expect(elapsed).toBeLessThan(15_000);
    const logs = await docker(["logs", container]).catch(() => "");
    process.stderr.write(`[broker-image] docker stop took ${elapsed} ms\n`);
    void logs;
  });
});
