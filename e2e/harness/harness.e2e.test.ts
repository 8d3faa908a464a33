// Self-test of the platform harness: get a platform (local by default,
// E2E_PLATFORM=kind for a kind cluster), create a namespace, stop.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type E2EPlatform, getPlatform } from "./index.ts";

let platform: E2EPlatform | undefined;

beforeAll(async () => {
  platform = await getPlatform("harness");
});

afterAll(async () => {
  await platform?.stop();
});

it("creates a namespace on the selected platform", async () => {
  const p = platform!;
  expect(p.name).toBe(process.env["E2E_PLATFORM"] ?? "local");
  await p.applyYaml(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "harness" } }));
  const phase = await p.waitFor(
    async () =>
      (await p.kubectl(["get", "namespace", "harness", "-o", "jsonpath={.status.phase}"])).stdout ||
      undefined,
    { timeoutMs: 30_000, what: "namespace harness" },
  );
  expect(phase).toBe("Active");
  await p.kubectl(["delete", "namespace", "harness", "--wait=false"]);
});

it("dials a broker pod by its IP and sees it restart after its process is SIGKILLed", async () => {
  const p = platform!;
  const ns = "harness-pod";
  await p.kubectl(["create", "namespace", ns]);
  await p.applyYaml(
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "broker", namespace: ns },
      spec: {
        containers: [
          {
            name: "broker",
            image: "ghcr.io/narad/narad:0.1.0",
            imagePullPolicy: "IfNotPresent",
            args: ["serve", "--addr=$(POD_IP):7942", "--data-dir=/var/lib/narad/data"],
            env: [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
            readinessProbe: { httpGet: { path: "/readyz", port: 7942 }, periodSeconds: 1 },
            volumeMounts: [{ name: "data", mountPath: "/var/lib/narad" }],
          },
        ],
        volumes: [{ name: "data", emptyDir: {} }],
      },
    }),
  );
  const ready = async (restarts: number) =>
    p.waitFor(
      async () => {
        const out = await p.kubectl([
          "-n",
          ns,
          "get",
          "pod",
          "broker",
          "-o",
          "jsonpath={.status.containerStatuses[0].ready} {.status.containerStatuses[0].restartCount}",
        ]);
        return out.stdout.trim() === `true ${restarts}`;
      },
      { timeoutMs: 120_000, what: `broker pod Ready with ${restarts} restarts`, intervalMs: 500 },
    );
  await ready(0);
  const ip = await p.podAddress(ns, "broker");
  expect((await fetch(`http://${ip}:7942/readyz`)).status).toBe(200);
  await p.killPodProcess(ns, "broker", "broker");
  await ready(1);
  expect((await fetch(`http://${ip}:7942/readyz`)).status).toBe(200);
  await p.kubectl(["delete", "namespace", ns, "--wait=false"]);
});
