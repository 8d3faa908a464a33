// Minimal HTTPS/HTTP GET for health probes, independent of any Kubernetes
// client so readiness can be checked before a client could even be built.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

const PROBE_TIMEOUT_MS = 2_000;

export interface ProbeTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** For components that serve a self-signed cert (kube-controller-manager). */
  insecure?: boolean;
}

export interface ProbeResult {
  status: number;
  body: string;
}

export function probe(url: string, tls: ProbeTls = {}): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const isHttps = url.startsWith("https:");
    const options = isHttps
      ? {
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
          rejectUnauthorized: tls.insecure !== true,
          timeout: PROBE_TIMEOUT_MS,
        }
      : { timeout: PROBE_TIMEOUT_MS };
    const req = (isHttps ? httpsRequest : httpRequest)(url, { ...options, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`timeout after ${PROBE_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end();
  });
}
