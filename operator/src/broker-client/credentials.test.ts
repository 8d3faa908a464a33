import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { CLUSTER_SECRET_CACHE_MS } from "../constants.ts";
import { MemoryKind } from "../controller/fake-kube.ts";
import { ManualClock } from "../kube/manual-clock.ts";
import { ClusterCredentials } from "./credentials.ts";
import { HttpBrokerClient } from "./http-client.ts";

const status = {
  nodeId: "demo-0",
  ready: true,
  draining: false,
  wal: { pendingRecords: 0, checkpoint: 1, nextSeq: 1 },
};
let server: Server;
let port = 0;
const authHeaders: Array<string | undefined> = [];

beforeAll(async () => {
  // A broker with auth on: the cluster secret "s3cret" is the admin bearer.
  server = createServer((req, res) => {
    authHeaders.push(req.headers.authorization);
    if (req.headers.authorization !== "Bearer s3cret") {
      res.statusCode = 401;
      res.end('{"error":"authentication required"}');
      return;
    }
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(status));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function setup() {
  const clock = new ManualClock(0);
  const pods = new MemoryKind<V1Pod>("Pod");
  const clusters = new MemoryKind<NaradCluster>("NaradCluster");
  const secrets = new Map<string, V1Secret>();
  let reads = 0;
  pods.put({
    metadata: { name: "demo-0", namespace: "ns1", labels: { "narad.dev/cluster": "demo" } },
    status: { podIP: "127.0.0.1" },
  });
  clusters.put({
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: "ns1" },
    spec: {},
  });
  const put = (name: string, value: string) =>
    secrets.set(`ns1/${name}`, { data: { secret: Buffer.from(`${value}\n`).toString("base64") } });
  const creds = new ClusterCredentials({
    pods,
    clusters,
    clock,
    getSecret: async (ns, name) => {
      reads++;
      return secrets.get(`${ns}/${name}`);
    },
  });
  return { clock, put, creds, reads: () => reads, clusters };
}

describe("broker credentials", () => {
  it("sends the cluster's shared secret as a bearer token, found from the pod's cluster", async () => {
    const t = setup();
    t.put("demo-cluster-secret", "s3cret");
    const client = new HttpBrokerClient({ port, credentials: t.creds.source });
    expect((await client.status({ podIP: "127.0.0.1", id: "demo-0" })).nodeId).toBe("demo-0");
    expect(authHeaders.at(-1)).toBe("Bearer s3cret");
    // Unknown pod: no credentials, and the broker's 401 surfaces as an error.
    await expect(client.status({ podIP: "127.0.0.1", id: "other-0" })).rejects.toThrow(/HTTP 401/);
  });

  it("reads the Secret named by spec.security.clusterSecret, cached for a while", async () => {
    const t = setup();
    t.clusters.put({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: "demo", namespace: "ns1" },
      spec: { security: { clusterSecret: "mine" } },
    });
    t.put("mine", "s3cret");
    const ep = { podIP: "127.0.0.1", id: "demo-0" };
    expect(await t.creds.source(ep)).toEqual({ bearer: "s3cret" });
    t.put("mine", "rotated");
    expect(await t.creds.source(ep)).toEqual({ bearer: "s3cret" });
    expect(t.reads()).toBe(1);
    await t.clock.advance(CLUSTER_SECRET_CACHE_MS);
    expect(await t.creds.source(ep)).toEqual({ bearer: "rotated" });
  });
});
