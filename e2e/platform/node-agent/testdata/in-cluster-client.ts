// Test workload run with image `narad.test/node`: uses the unmodified
// in-cluster config (service-account token, ca.crt and KUBERNETES_SERVICE_*
// provided by the node agent) to list ConfigMaps in its own namespace, and
// serves the outcome on $POD_IP:8080/result so a test can poll it.
//   200 {"ok":true,"count":N}          list allowed
//   200 {"ok":false,"code":403,...}    list refused

import fs from "node:fs";
import http from "node:http";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";

const NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
const RETRY_MS = 1_000;

const kc = new KubeConfig();
kc.loadFromCluster();
const core = kc.makeApiClient(CoreV1Api);
const namespace = fs.readFileSync(NAMESPACE_FILE, "utf8").trim();

let result: Record<string, unknown> = { ok: false, pending: true };

async function attempt(): Promise<void> {
  try {
    const list = await core.listNamespacedConfigMap({ namespace });
    result = { ok: true, count: list.items.length, names: list.items.map((c) => c.metadata?.name) };
  } catch (err) {
    result = { ok: false, code: (err as { code?: number }).code ?? null, message: String(err).slice(0, 300) };
  }
}

// Keep retrying so a test can grant RBAC later and see the result change.
const loop = async () => {
  await attempt();
  setTimeout(loop, RETRY_MS);
};
void loop();

http
  .createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(result));
  })
  .listen(8080, process.env["POD_IP"] || "127.0.0.1");

process.on("SIGTERM", () => process.exit(0));
