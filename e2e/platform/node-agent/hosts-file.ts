// Cluster DNS names without a DNS server: one hosts file, bind-mounted at
// /etc/hosts in every container, that maps
//  - the names a StatefulSet pod gets from `hostname` + `subdomain` (its
//    headless Service) to its pod IP:
//      127.N.0.5  web-0.web.ns.svc.cluster.local web-0.web.ns.svc web-0.web.ns web-0.web
//  - a Service's name to the IPs of its ready selected pods, one line each.
//    There is no kube-proxy, so there is no port translation either: clients
//    must dial the targetPort.
//      127.N.0.5  web.ns.svc.cluster.local web.ns.svc web.ns
//
// glibc's getaddrinfo (and so Node's dns.lookup and grpc-js) reads it. The
// host's own /etc/hosts comes first so localhost keeps working. The file is
// rewritten in place (same inode), because a bind mount pins the inode a
// rename would replace.

import fs from "node:fs";
import type { V1Pod, V1Service } from "@kubernetes/client-node";

export const HOSTS_MOUNT_PATH = "/etc/hosts";
export const CLUSTER_DOMAIN = "cluster.local";
const HEADER = "# --- narad node agent: pod and service names ---";

/** Hosts lines for pods with an IP, a hostname and a subdomain, sorted for a stable file (pure). */
export function podHostsLines(pods: readonly V1Pod[]): string[] {
  const lines: string[] = [];
  for (const p of pods) {
    const ip = p.status?.podIP;
    const host = p.spec?.hostname;
    const sub = p.spec?.subdomain;
    const ns = p.metadata?.namespace;
    const phase = p.status?.phase;
    if (!ip || !host || !sub || !ns || phase === "Succeeded" || phase === "Failed") continue;
    const base = `${host}.${sub}`;
    lines.push(`${ip}\t${base}.${ns}.svc.${CLUSTER_DOMAIN} ${base}.${ns}.svc ${base}.${ns} ${base}`);
  }
  return lines.sort();
}

function podReady(p: V1Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

/**
 * One line per address a Service would have as an endpoint: pods in its
 * namespace matching its selector, with an IP, Ready (or any, with
 * publishNotReadyAddresses) and not terminating. Computed here rather than
 * read from EndpointSlices because the API server rejects loopback addresses
 * in EndpointSlices, so kcm cannot publish our 127.N.x.y pods. Pure.
 */
export function serviceHostsLines(services: readonly V1Service[], pods: readonly V1Pod[]): string[] {
  const lines = new Set<string>();
  for (const svc of services) {
    const name = svc.metadata?.name;
    const ns = svc.metadata?.namespace;
    const selector = svc.spec?.selector;
    if (!name || !ns || !selector || Object.keys(selector).length === 0) continue;
    const anyReadiness = svc.spec?.publishNotReadyAddresses === true;
    for (const p of pods) {
      const ip = p.status?.podIP;
      if (!ip || p.metadata?.namespace !== ns || p.metadata?.deletionTimestamp) continue;
      const labels = p.metadata?.labels ?? {};
      if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) continue;
      if (!anyReadiness && !podReady(p)) continue;
      lines.add(`${ip}\t${name}.${ns}.svc.${CLUSTER_DOMAIN} ${name}.${ns}.svc ${name}.${ns}`);
    }
  }
  return [...lines].sort();
}

export function hostsFileContent(
  hostHosts: string,
  pods: readonly V1Pod[],
  services: readonly V1Service[] = [],
): string {
  const base = hostHosts.endsWith("\n") || hostHosts === "" ? hostHosts : `${hostHosts}\n`;
  const lines = [...podHostsLines(pods), ...serviceHostsLines(services, pods)];
  return `${base}${HEADER}\n${lines.join("\n")}\n`;
}

export class HostsFile {
  readonly path: string;
  readonly #hostHosts: string;
  #last = "";

  constructor(path: string) {
    this.path = path;
    let host = "127.0.0.1\tlocalhost\n";
    try {
      host = fs.readFileSync(HOSTS_MOUNT_PATH, "utf8");
    } catch {
      // keep the minimal default
    }
    this.#hostHosts = host;
    this.update([]);
  }

  update(pods: readonly V1Pod[], services: readonly V1Service[] = []): void {
    const content = hostsFileContent(this.#hostHosts, pods, services);
    if (content === this.#last) return;
    fs.writeFileSync(this.path, content, { flag: "w" });
    this.#last = content;
  }
}
