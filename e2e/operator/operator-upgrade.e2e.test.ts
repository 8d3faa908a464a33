// An operator upgrade with Helm changes the broker image of the clusters
// that leave spec.image unset, and only theirs: the rule is "spec.image
// wins, else the operator's brokerImage" (the CRD has no default for it, so
// the API server never writes one). The operator runs in-cluster from the
// chart; `helm upgrade --set brokerImage=…` restarts it with the new
// setting. On the local platform an image tag selects nothing (the node
// agent maps the repository to the working tree's program), so the tags
// here only have to differ. The cluster that follows has 3 brokers; the
// roll of a 1-broker cluster is single-broker-roll.e2e.test.ts.

import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import type { Platform } from "../platform/platform.ts";
import { startSuitePlatform, waitFor } from "./harness.ts";

const REPO = resolve(import.meta.dirname, "../..");
const CHART = join(REPO, "charts/narad-operator");
const log = stderrLog("operator-upgrade-e2e");
const NS = "shop";
const OLD = "ghcr.io/narad/narad:0.1.0-old";
const NEW = "ghcr.io/narad/narad:0.1.0-new";
const PINNED = "ghcr.io/narad/narad:0.1.0-pinned";

let platform: Platform;

const jsonpath = async (args: string[], path: string) =>
  (await platform.kubectl(["get", ...args, "-o", `jsonpath=${path}`])).stdout;
const stsImage = (name: string) =>
  jsonpath(["statefulset", name, "-n", NS], "{.spec.template.spec.containers[0].image}");
const podImage = (pod: string) => jsonpath(["pod", pod, "-n", NS], "{.spec.containers[0].image}");
const ready = async (name: string) =>
  (await jsonpath(
    ["naradcluster", name, "-n", NS],
    '{.status.phase}/{.status.conditions[?(@.type=="Ready")].status}',
  )) === "Running/True";

function cluster(name: string, replicas: number, image?: string): string {
  return JSON.stringify({
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name, namespace: NS },
    spec: { replicas, ...(image === undefined ? {} : { image }) },
  });
}

async function helm(verb: "install" | "upgrade", brokerImage: string): Promise<void> {
  const extra = verb === "install" ? ["--create-namespace"] : ["--reuse-values"];
  await platform.helm(
    [verb, "narad-operator", CHART, "-n", "narad-system", ...extra, "--set", `brokerImage=${brokerImage}`],
    { timeoutMs: 180_000 },
  );
  await platform.kubectl(
    ["-n", "narad-system", "rollout", "status", "deploy/narad-operator", "--timeout=180s"],
    {
      timeoutMs: 200_000,
    },
  );
}

beforeAll(async () => {
  ({ platform } = await startSuitePlatform("operator-upgrade", log, [NS]));
}, 240_000);

afterAll(async () => {
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("operator upgrade (helm upgrade --set brokerImage)", () => {
  it("moves clusters without spec.image to the new brokerImage and leaves pinned ones alone", async () => {
    await helm("install", OLD);
    await platform.applyYaml(cluster("follow", 3));
    await platform.applyYaml(cluster("pinned", 1, PINNED));
    await waitFor(async () => (await ready("follow")) && (await ready("pinned")), {
      timeoutMs: 240_000,
      what: "both clusters Ready",
      intervalMs: 1000,
    });
    expect(await stsImage("follow")).toBe(OLD);
    expect(await stsImage("pinned")).toBe(PINNED);
    // The API server stored no image for the cluster that left it unset.
    expect(await jsonpath(["naradcluster", "follow", "-n", NS], "{.spec.image}")).toBe("");

    await helm("upgrade", NEW);
    await waitFor(async () => (await stsImage("follow")) === NEW, {
      timeoutMs: 180_000,
      what: "follow's StatefulSet on the new image",
      intervalMs: 1000,
    });
    // The roll replaces the pod with one on the new image, and the cluster is Ready again.
    const followPods = ["follow-0", "follow-1", "follow-2"];
    await waitFor(
      async () => {
        for (const pod of followPods) if ((await podImage(pod)) !== NEW) return false;
        return ready("follow");
      },
      {
        timeoutMs: 400_000,
        what: "every follow pod running the new image, cluster Ready",
        intervalMs: 1000,
      },
    );
    expect(await stsImage("pinned")).toBe(PINNED);
    expect(await podImage("pinned-0")).toBe(PINNED);
    expect(await ready("pinned")).toBe(true);
  });
});
