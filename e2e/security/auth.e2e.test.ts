// Authentication on brokers run by the operator (issue #9), on the local
// platform with a real API server: the operator creates the users Secret and
// the cluster RPC secret, mounts them, and the brokers then
//   - answer 401 to produce without credentials (and with a wrong password),
//     200 to /healthz, /readyz and /metrics;
//   - accept the Secret's admin credentials (202) and the cluster secret as
//     an admin bearer token;
//   - authenticate cluster RPC with the shared secret: records produced on
//     one broker are read back through the others (partitions on all three);
//   - let the operator's own admin calls through (WAL counts in status).
// A second, 1-broker cluster serves HTTPS from a kubernetes.io/tls Secret.
// Also: the optional NetworkPolicy object as stored (the local platform has
// no network plugin, so it is not enforced here), and the pods' security
// context (carried in the spec; the node agent runs pods as root processes).
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCredentials, basicAuth } from "../operator/credentials.ts";
import {
  getJson,
  type OperatorProcess,
  prepareCluster,
  startOperator,
  waitFor,
} from "../operator/harness.ts";
import { listBrokerPods, readTopic } from "../operator/load.ts";
import { stderrLog } from "../platform/log.ts";
import { type Platform, startPlatform } from "../platform/platform.ts";
import { ensureBinaries } from "../platform/tools.ts";

const log = stderrLog("auth-e2e");
const REPO = resolve(import.meta.dirname, "../..");
const NS = "secure";
const NAME = "sec";
const TOPIC = "payments";
const PARTITIONS = 6;

let platform: Platform;
let core: CoreV1Api;
let dir: string;
let op: OperatorProcess | undefined;
let ips: string[] = [];
let admin: Record<string, string>;

interface Cluster {
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    members?: Array<{ id: string; state: string; walPendingRecords?: number }>;
  };
}

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  dir = await mkdtemp(join(tmpdir(), "narad-auth-e2e-"));
  platform = await startPlatform({ dir, log, binaries, keep: process.env["NARAD_KEEP"] === "1" });
  core = platform.kubeConfig.makeApiClient(CoreV1Api);
  await prepareCluster(platform.kubectl, REPO, [NS, "narad-system"]);
  op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity: "auth-a", logDir: dir });
  await op.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: NAME, namespace: NS },
      spec: {
        replicas: 3,
        image: "ghcr.io/narad/narad:0.1.0",
        security: {
          auth: { enabled: true },
          networkPolicy: {
            enabled: true,
            allowFrom: [
              { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "narad-system" } } },
            ],
          },
        },
      },
    }),
  );
  await waitFor(
    async () => {
      const c = await getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", NAME]);
      const ready = c?.status?.conditions?.find((x) => x.type === "Ready")?.status === "True";
      return ready && c?.status?.phase === "Running";
    },
    { timeoutMs: 240_000, what: "the secured cluster to be Ready", intervalMs: 1000 },
  );
  ips = (await listBrokerPods(core, NS, NAME)).map((p) => p.ip as string);
  const creds = await adminCredentials(platform.kubectl, NS, NAME);
  admin = basicAuth(creds.username, creds.password);
}, 600_000);

afterAll(async () => {
  await op?.kill("SIGKILL");
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

const url = (ip: string, path: string) => `http://${ip}:7942${path}`;

describe("security on a NaradCluster", () => {
  it("the operator created both Secrets, owned by the cluster, and mounts them by name only", async () => {
    for (const name of [`${NAME}-users`, `${NAME}-cluster-secret`]) {
      const s = await getJson<{ metadata: { ownerReferences?: Array<{ kind: string; name: string }> } }>(
        platform.kubectl,
        ["-n", NS, "secret", name],
      );
      expect(
        s?.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`),
        name,
      ).toEqual([`NaradCluster/${NAME}`]);
    }
    const creds = await adminCredentials(platform.kubectl, NS, NAME);
    expect(creds.username).toBe("admin");
    expect(creds.password).toMatch(/^[0-9a-f]{48}$/);
    expect(creds.clusterSecret).toMatch(/^[0-9a-f]{64}$/);
    const sts = await getJson<Record<string, unknown>>(platform.kubectl, ["-n", NS, "statefulset", NAME]);
    const template = JSON.stringify((sts?.["spec"] as { template?: unknown } | undefined)?.template);
    expect(template).not.toContain(creds.password);
    expect(template).not.toContain(creds.clusterSecret);
    expect(template).toContain('"NARAD_AUTH","value":"on"');
  });

  it("without credentials: 401 on the API, health/readiness/metrics open", async () => {
    const ip = ips[0] as string;
    const produce = await fetch(url(ip, `/v1/topics/${TOPIC}/produce`), { method: "POST", body: "x" });
    expect(produce.status).toBe(401);
    expect(((await produce.json()) as { error?: string }).error).toBeTruthy();
    expect((await fetch(url(ip, "/v1/topics"))).status).toBe(401);
    expect((await fetch(url(ip, "/admin/v1/status"))).status).toBe(401);
    const wrong = await fetch(url(ip, "/v1/topics"), { headers: basicAuth("admin", "not-the-password") });
    expect(wrong.status).toBe(401);
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      expect((await fetch(url(ip, path))).status, path).toBe(200);
    }
  });

  it("with the Secret's credentials: create, produce on every broker (202), read everything back through each (cluster RPC authenticated)", async () => {
    const created = await fetch(url(ips[0] as string, "/v1/topics"), {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({ name: TOPIC, partitions: PARTITIONS }),
    });
    expect(created.status).toBe(201);
    const perNode = 30;
    for (const [n, ip] of ips.entries()) {
      for (let i = 0; i < perNode; i++) {
        const r = await fetch(url(ip, `/v1/topics/${TOPIC}/produce?key=k${n}-${i}`), {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ n, i }),
        });
        expect(r.status).toBe(202);
      }
    }
    const total = perNode * ips.length;
    for (const ip of ips) {
      const got = await waitFor(
        async () => {
          const r = await readTopic(ip, TOPIC, PARTITIONS, () => admin);
          return r !== undefined && r.size >= total ? r : undefined;
        },
        { timeoutMs: 90_000, what: `all ${total} records via ${ip}`, intervalMs: 500 },
      );
      // Keys are unique per record: each exactly once.
      expect(got.size).toBe(total);
      expect([...got.values()].every((n) => n === 1)).toBe(true);
    }
    const topics = await getJson<{ items: Array<{ status?: { assignments?: Array<{ owner: string }> } }> }>(
      platform.kubectl,
      ["-n", NS, "naradtopics"],
    );
    // Owners on all three brokers: the reads above crossed the cluster RPC.
    expect(new Set(topics?.items[0]?.status?.assignments?.map((a) => a.owner)).size).toBe(3);
  });

  it("the cluster secret is an admin bearer token, which is how the operator reads WAL counts", async () => {
    const creds = await adminCredentials(platform.kubectl, NS, NAME);
    const r = await fetch(url(ips[1] as string, "/admin/v1/status"), {
      headers: { authorization: `Bearer ${creds.clusterSecret}` },
    });
    expect(r.status).toBe(200);
    const c = await waitFor(
      async () => {
        const x = await getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", NAME]);
        return x?.status?.members?.every((m) => m.walPendingRecords !== undefined) ? x : undefined;
      },
      {
        timeoutMs: 90_000,
        what: "WAL counts from the operator's authenticated status calls",
        intervalMs: 1000,
      },
    );
    expect(c.status?.members).toHaveLength(3);
    const rejected = op?.lines().filter((l) => /HTTP 401/.test(JSON.stringify(l))) ?? [];
    expect(rejected.map((l) => l.msg)).toEqual([]);
  });

  it("runs the brokers locked down, and creates the NetworkPolicy", async () => {
    const pod = await getJson<{
      spec: {
        securityContext: Record<string, unknown>;
        containers: Array<{ securityContext: Record<string, unknown> }>;
      };
    }>(platform.kubectl, ["-n", NS, "pod", `${NAME}-0`]);
    expect(pod?.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 });
    expect(pod?.spec.containers[0]?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    const np = await getJson<{
      spec: { ingress: Array<{ ports: Array<{ port: number }>; from?: unknown[] }> };
    }>(platform.kubectl, ["-n", NS, "networkpolicy", `${NAME}-brokers`]);
    expect(np?.spec.ingress.map((r) => [r.ports[0]?.port, r.from?.length])).toEqual([
      [7942, 2], // the cluster's brokers + allowFrom
      [7943, 1], // the cluster's brokers only
    ]);
  });
});

describe("TLS on the API port", () => {
  const TLS_NAME = "tls";

  it("brokers serve HTTPS from a kubernetes.io/tls Secret; probes and the operator's admin calls use it (trusting ca.crt)", async () => {
    // A self-signed certificate that is also its own CA (ca.crt = tls.crt).
    const certDir = await mkdtemp(join(tmpdir(), "narad-tls-"));
    const crt = join(certDir, "tls.crt");
    const key = join(certDir, "tls.key");
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      crt,
      "-days",
      "1",
      "-subj",
      "/CN=narad-e2e",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
    ]);
    await platform.kubectl([
      "-n",
      NS,
      "create",
      "secret",
      "generic",
      "broker-tls",
      "--type=kubernetes.io/tls",
      `--from-file=tls.crt=${crt}`,
      `--from-file=tls.key=${key}`,
      `--from-file=ca.crt=${crt}`,
    ]);
    await platform.applyYaml(
      JSON.stringify({
        apiVersion: "narad.dev/v1alpha1",
        kind: "NaradCluster",
        metadata: { name: TLS_NAME, namespace: NS },
        spec: {
          replicas: 1,
          image: "ghcr.io/narad/narad:0.1.0",
          security: { auth: { enabled: true }, tls: { secretName: "broker-tls" } },
        },
      }),
    );
    // Ready means the node agent's HTTPS readiness probe passed.
    const c = await waitFor(
      async () => {
        const x = await getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", TLS_NAME]);
        const ready = x?.status?.conditions?.find((y) => y.type === "Ready")?.status === "True";
        // WAL counts come from the operator's own status call over HTTPS with the bearer.
        return ready && x?.status?.members?.[0]?.walPendingRecords !== undefined ? x : undefined;
      },
      { timeoutMs: 240_000, what: "the TLS cluster Ready with WAL counts", intervalMs: 1000 },
    );
    expect(c.status?.members).toHaveLength(1);
    const ip = (await listBrokerPods(core, NS, TLS_NAME))[0]?.ip as string;
    const ca = await readFile(crt, "utf8");
    const get = (path: string, headers: Record<string, string> = {}) =>
      new Promise<number>((resolveStatus, reject) => {
        const req = https.request(
          `https://${ip}:7942${path}`,
          { ca, headers, checkServerIdentity: () => undefined },
          (res) => {
            res.resume();
            resolveStatus(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await get("/healthz")).toBe(200);
    expect(await get("/v1/topics")).toBe(401);
    const creds = await adminCredentials(platform.kubectl, NS, TLS_NAME);
    expect(await get("/v1/topics", basicAuth(creds.username, creds.password))).toBe(200);
    // Plain HTTP on the same port is not served.
    await expect(fetch(url(ip, "/healthz"), { signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
  });
});
