// Reachability probes for the NetworkPolicy suite: a Node script run inside a
// pod (`kubectl exec … node -e REACH_SCRIPT '<targets JSON>'`, the images have
// Node but no shell) that opens one TCP connection per target and reports what
// happened, and the pure classification of those outcomes.

/** One connection to try from inside a pod. */
export interface ReachTarget {
  /** What the test calls it, e.g. "broker-0:7943". */
  name: string;
  host: string;
  port: number;
  /** Send `GET /healthz` once connected and report the HTTP status. */
  http?: boolean;
}

/**
 * What one attempt gave: "open" (TCP connected), "http <status>", "timeout"
 * (no answer within the limit: a dropped SYN), or an errno code
 * (ECONNREFUSED, EHOSTUNREACH, ENOTFOUND, ...).
 */
export type ReachOutcome = string;

/** reached: the port answered; blocked: the connection was silently dropped; error: anything else. */
export type Reachability = "reached" | "blocked" | "error";

/**
 * The policy agent drops the first packet of a connection it refuses, so a
 * refused peer sees a timeout. A refusal (RST) or an unreachable route means
 * something other than the policy is wrong, which the test must not count
 * as "blocked".
 */
export function classify(outcome: ReachOutcome): Reachability {
  if (outcome === "open" || /^http \d{3}$/.test(outcome)) return "reached";
  if (outcome === "timeout") return "blocked";
  return "error";
}

/** The probe timeout: a dropped SYN is retried after 1 s and 3 s; 4 s covers a slow accept on a loaded node. */
export const REACH_TIMEOUT_MS = 4_000;

/** Node code; argv[1] is the JSON array of ReachTarget. Prints one JSON object name -> outcome. */
export const REACH_SCRIPT = `const net = require("net");
const targets = JSON.parse(process.argv[1]);
const one = (t) => new Promise((resolve) => {
  const s = net.connect({ host: t.host, port: t.port });
  let settled = false;
  const done = (r) => { if (!settled) { settled = true; s.destroy(); resolve([t.name, r]); } };
  s.setTimeout(${REACH_TIMEOUT_MS}, () => done("timeout"));
  s.on("error", (e) => done(e.code || String(e)));
  s.on("connect", () => {
    if (!t.http) return done("open");
    let buf = "";
    s.on("data", (d) => { buf += d; const m = /^HTTP\\/1\\.[01] (\\d{3})/.exec(buf); if (m) done("http " + m[1]); });
    s.write("GET /healthz HTTP/1.1\\r\\nHost: " + t.host + "\\r\\nConnection: close\\r\\n\\r\\n");
  });
});
Promise.all(targets.map(one)).then((r) => console.log(JSON.stringify(Object.fromEntries(r))));`;

/** Parses the script's output line. */
export function parseReach(stdout: string): Record<string, ReachOutcome> {
  const line = stdout.trim().split("\n").pop() ?? "";
  const parsed: unknown = JSON.parse(line);
  if (typeof parsed !== "object" || parsed === null) throw new Error(`reach probe printed ${line}`);
  const out: Record<string, ReachOutcome> = {};
  for (const [k, v] of Object.entries(parsed)) out[k] = String(v);
  return out;
}
