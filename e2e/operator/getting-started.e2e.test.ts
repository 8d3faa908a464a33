// docs/getting-started-kubernetes.md, step by step, on the local platform:
// the operator installed with the page's helm command (it runs as a pod),
// the two examples applied as written (the topic at the default 3 copies),
// the password read from the Secret the way the page reads it, then an
// application pod that produces through the in-cluster Service name
// (http://demo.default.svc:7942) with those credentials, and a second one
// that consumes it as the page's `narad sub` does. What the local platform
// cannot do (no kubelet, so no `kubectl port-forward` stream) is said in the
// page.

import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import type { Platform } from "../platform/platform.ts";
import { startSuitePlatform, waitFor } from "./harness.ts";

const REPO = resolve(import.meta.dirname, "../..");
const log = stderrLog("getting-started-e2e");
const VERSION = (JSON.parse(await readFile(join(REPO, "package.json"), "utf8")) as { version: string })
  .version;
const NARAD_IMAGE = `ghcr.io/narad/narad:${VERSION}`;

let platform: Platform;

const kubectl = (args: string[], timeoutMs = 120_000) => platform.kubectl(args, { timeoutMs });
const jsonpath = async (args: string[], path: string) =>
  (await kubectl(["get", ...args, "-o", `jsonpath=${path}`])).stdout;

/** A pod in namespace default running the narad CLI (the broker image) as an application would. */
function appPod(name: string, args: string[]): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      restartPolicy: "Never",
      containers: [
        {
          name: "app",
          image: NARAD_IMAGE,
          args,
          env: [
            // Step 4: the client Service, named like the cluster, from inside the cluster.
            { name: "NARAD_URL", value: "http://demo.default.svc:7942" },
            // Step 3: the generated admin login, from the Secret.
            { name: "NARAD_USER", valueFrom: { secretKeyRef: { name: "demo-users", key: "username" } } },
            { name: "NARAD_PASSWORD", valueFrom: { secretKeyRef: { name: "demo-users", key: "password" } } },
          ],
        },
      ],
    },
  });
}

/** Runs the pod to its end: its phase (Succeeded or Failed) and its output. */
async function runPod(name: string, args: string[]): Promise<{ phase: string; output: string }> {
  await platform.applyYaml(appPod(name, args));
  const phase = await waitFor(
    async () => {
      const p = await jsonpath(["pod", name, "-n", "default"], "{.status.phase}");
      return p === "Succeeded" || p === "Failed" ? p : undefined;
    },
    { timeoutMs: 120_000, what: `pod ${name} to finish`, intervalMs: 500 },
  );
  const output = await readFile(join(platform.dir, "node", "pods", `default_${name}`, "app.log"), "utf8");
  return { phase, output };
}

async function runToCompletion(name: string, args: string[]): Promise<string> {
  const { phase, output } = await runPod(name, args);
  expect(phase, output).toBe("Succeeded");
  return output;
}

beforeAll(async () => {
  ({ platform } = await startSuitePlatform("getting-started", log, []));
}, 240_000);

afterAll(async () => {
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("getting started on Kubernetes (docs/getting-started-kubernetes.md)", () => {
  it("install, cluster and topic, credentials, produce and consume through the Service name", async () => {
    // 1. Install the operator.
    await platform.helm(
      [
        "install",
        "narad-operator",
        join(REPO, "charts/narad-operator"),
        "-n",
        "narad-system",
        "--create-namespace",
      ],
      { timeoutMs: 180_000 },
    );
    await kubectl(
      ["-n", "narad-system", "rollout", "status", "deploy/narad-operator", "--timeout=180s"],
      200_000,
    );

    // 2. A cluster and a topic, the examples as written.
    await kubectl(["apply", "-f", join(REPO, "examples/naradcluster.yaml")]);
    await kubectl(["apply", "-f", join(REPO, "examples/naradtopic.yaml")]);
    await waitFor(
      async () =>
        (await jsonpath(["naradcluster", "demo"], "{.status.readyReplicas}/{.status.phase}")) === "3/Running",
      { timeoutMs: 240_000, what: "READY 3, PHASE Running", intervalMs: 1000 },
    );
    await waitFor(
      async () =>
        (await jsonpath(["naradtopic", "orders"], '{.status.conditions[?(@.type=="Ready")].status}')) ===
        "True",
      { timeoutMs: 120_000, what: "topic orders READY True", intervalMs: 1000 },
    );
    // The example names no replicationFactor: on 3 brokers it gets the
    // default, 3 copies with at least 2 in sync, every replica in sync.
    await waitFor(
      async () =>
        (await jsonpath(
          ["naradtopic", "orders"],
          "{.status.replicationFactor}/{.status.minInsyncReplicas}/{.status.underReplicatedPartitions}",
        )) === "3/2/0",
      {
        timeoutMs: 60_000,
        what: "topic orders at 3 copies, 2 in sync, none under-replicated",
        intervalMs: 1000,
      },
    );

    // 3. The password, read the way the page reads it.
    const password = Buffer.from(
      await jsonpath(["secret", "demo-users"], "{.data.password}"),
      "base64",
    ).toString();
    expect(password.length).toBeGreaterThanOrEqual(16);

    // 4 and 5. Produce and consume from inside the cluster.
    await runToCompletion("producer", ["pub", "orders", '{"item":"book"}', "--key", "user-1"]);
    const consumed = await runToCompletion("consumer", [
      "sub",
      "orders",
      "--group",
      "billing",
      "--count",
      "1",
      "--json",
    ]);
    const message = consumed
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { key?: string; payload?: unknown; topic?: string })
      .find((m) => m.topic === "orders");
    expect(message, consumed).toMatchObject({ key: "user-1", payload: { item: "book" } });

    // Auth is on, as the page says: a wrong password fails (exit 1: the pod ends Failed).
    const refused = await runPod("wrong-password", ["--user", "admin", "--password", "wrong", "topic", "ls"]);
    expect(refused.phase, refused.output).toBe("Failed");
    expect(refused.output).toMatch(/401|unauthenticated|credentials/i);
  });
});
