// Pod DNS names without a DNS server: one hosts file, bind-mounted at
// /etc/hosts in every container, that maps the names a StatefulSet pod gets
// from `hostname` + `subdomain` (its headless Service) to its pod IP:
//
//   127.N.0.5  web-0.web.ns.svc.cluster.local web-0.web.ns.svc web-0.web.ns web-0.web
//
// glibc's getaddrinfo (and so Node's dns.lookup and grpc-js) reads it. The
// host's own /etc/hosts comes first so localhost keeps working. The file is
// rewritten in place (same inode), because a bind mount pins the inode a
// rename would replace.

import fs from "node:fs";
import type { V1Pod } from "@kubernetes/client-node";

export const HOSTS_MOUNT_PATH = "/etc/hosts";
export const CLUSTER_DOMAIN = "cluster.local";
const HEADER = "# --- narad node agent: pod names (hostname.subdomain) ---";

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

export function hostsFileContent(hostHosts: string, pods: readonly V1Pod[]): string {
  const base = hostHosts.endsWith("\n") || hostHosts === "" ? hostHosts : `${hostHosts}\n`;
  return `${base}${HEADER}\n${podHostsLines(pods).join("\n")}\n`;
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

  update(pods: readonly V1Pod[]): void {
    const content = hostsFileContent(this.#hostHosts, pods);
    if (content === this.#last) return;
    fs.writeFileSync(this.path, content, { flag: "w" });
    this.#last = content;
  }
}
