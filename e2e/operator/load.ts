// Load and ledger for operator e2e suites: a continuous producer that records
// every 202, a pod sampler that tracks availability, and a verifier that reads
// every record back and counts what was lost or duplicated. Shared by the roll,
// failure, scale and chaos suites so each counts acknowledged messages the
// same way.
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api } from "@kubernetes/client-node";
import { waitFor } from "./harness.ts";

export const BROKER_PORT = 7942;

export interface PodInfo {
  name: string;
  uid: string;
  ip: string | undefined;
  ready: boolean;
  terminating: boolean;
  revision: string | undefined;
}

/** Extra request headers (e.g. credentials) for every broker call. */
export type HeaderSource = () => Record<string, string>;
const noHeaders: HeaderSource = () => ({});

export async function listBrokerPods(
  core: CoreV1Api,
  namespace: string,
  cluster: string,
): Promise<PodInfo[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: `narad.dev/cluster=${cluster}` });
  return list.items.map((p) => ({
    name: p.metadata?.name ?? "",
    uid: p.metadata?.uid ?? "",
    ip: p.status?.podIP || undefined,
    ready:
      p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true &&
      !p.metadata?.deletionTimestamp,
    terminating: Boolean(p.metadata?.deletionTimestamp),
    revision: p.metadata?.labels?.["controller-revision-hash"],
  }));
}

/** Samples pods every 200 ms: the most that were unavailable (missing, not Ready, terminating) at once. */
export class PodSampler {
  maxUnavailable = 0;
  samples = 0;
  worst: string[] = [];
  readyIps: string[] = [];
  readonly deleted = new Set<string>();
  readonly #uids = new Map<string, string>();
  #running = true;
  readonly #loop: Promise<void>;

  constructor(replicas: () => number, list: () => Promise<PodInfo[]>, log: (line: string) => void) {
    this.#loop = (async () => {
      while (this.#running) {
        try {
          const pods = await list();
          const ready = pods.filter((p) => p.ready);
          const unavailable = replicas() - ready.length;
          this.samples++;
          if (unavailable > this.maxUnavailable) {
            this.maxUnavailable = unavailable;
            this.worst = pods.map(
              (p) => `${p.name}:${p.ready ? "Ready" : p.terminating ? "Terminating" : "NotReady"}`,
            );
          }
          this.readyIps = ready.map((p) => p.ip).filter((ip): ip is string => ip !== undefined);
          for (const p of pods) {
            const was = this.#uids.get(p.name);
            if (was !== undefined && was !== p.uid) this.deleted.add(`${p.name}/${was}`);
            this.#uids.set(p.name, p.uid);
          }
        } catch (err) {
          log(`sampler: ${String(err)}`);
        }
        await sleep(200);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

export interface LoadProducerOptions {
  /** Prefix of every message id (and key), so a verifier can tell runs apart. */
  tag: string;
  topic: string;
  /** The brokers to spread produce over (e.g. the Ready pods' IPs). */
  ips: () => string[];
  workers?: number;
  headers?: HeaderSource;
  /** Pause between two messages of one worker. */
  pauseMs?: number;
  /**
   * How long one produce may take before the client gives up (ambiguous);
   * 5 s unless given. A produce that names no acks on a replicated topic is
   * acks=all: it waits for the ISR, up to --replica-lag-ms while a follower
   * restarts.
   */
  timeoutMs?: number;
}

/**
 * Continuous producer over the given brokers (as a client of the Service
 * would). A 503/429/5xx or a refused connection never reached the WAL:
 * retried on another broker with the same id. A timeout, a reset, a 504
 * (a draining broker's forward in doubt) or a 503 commit_timeout (acks=all,
 * the default on a replicated topic: in the WAL, not yet on the ISR) is
 * ambiguous: the id is set aside (may appear at most once) and not retried.
 */
export class LoadProducer {
  readonly acked = new Set<string>();
  /** Which broker answered 202 for an id, and when (to trace a lost record in the brokers' logs). */
  readonly ackedVia = new Map<string, { ip: string; at: string }>();
  readonly ambiguous = new Set<string>();
  attempts = 0;
  errors = 0;
  /** The longest time a produce took to its 202. */
  maxAckMs = 0;
  readonly errorKinds = new Map<string, number>();
  readonly exclude = new Set<string>();
  readonly tag: string;
  #running = true;
  #rr = 0;
  readonly #workers: Promise<void>[];
  readonly #opts: LoadProducerOptions;

  constructor(opts: LoadProducerOptions) {
    this.#opts = opts;
    this.tag = opts.tag;
    this.#workers = Array.from({ length: opts.workers ?? 3 }, (_, w) => this.#work(w));
  }

  #pick(): string | undefined {
    const ips = this.#opts.ips().filter((ip) => !this.exclude.has(ip));
    if (ips.length === 0) return undefined;
    return ips[this.#rr++ % ips.length];
  }

  #err(kind: string): void {
    this.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }

  async #work(w: number): Promise<void> {
    const headers = this.#opts.headers ?? noHeaders;
    let n = 0;
    while (this.#running) {
      const id = `${this.tag}-w${w}-${n++}`;
      for (;;) {
        const ip = this.#pick();
        if (ip === undefined) {
          await sleep(100);
          continue;
        }
        this.attempts++;
        const sent = Date.now();
        try {
          const r = await fetch(
            `http://${ip}:${BROKER_PORT}/v1/topics/${this.#opts.topic}/produce?key=${id}`,
            {
              method: "POST",
              body: JSON.stringify({ id }),
              headers: headers(),
              signal: AbortSignal.timeout(this.#opts.timeoutMs ?? 5_000),
            },
          );
          let body = "";
          if (r.status === 503) body = await r.text();
          else await r.body?.cancel();
          if (r.status === 202) {
            this.acked.add(id);
            this.ackedVia.set(id, { ip, at: new Date().toISOString() });
            this.maxAckMs = Math.max(this.maxAckMs, Date.now() - sent);
            break;
          }
          if (r.status === 503 && body.includes('"commit_timeout"')) {
            // In the WAL and still to be committed: a retry would store it twice.
            this.#err("HTTP 503 commit_timeout");
            this.ambiguous.add(id);
            break;
          }
          if (r.status === 504) {
            // A draining broker's forward to a peer may have stored it: in doubt, never retried.
            this.#err("HTTP 504");
            this.ambiguous.add(id);
            break;
          }
          this.#err(`HTTP ${r.status}`);
          await sleep(50);
        } catch (err) {
          const code = (err as { cause?: { code?: string } }).cause?.code;
          if (code === "ECONNREFUSED") {
            this.#err("ECONNREFUSED");
            await sleep(50);
            continue;
          }
          this.#err(code ?? (err as Error).name);
          this.ambiguous.add(id);
          break;
        }
      }
      await sleep(this.#opts.pauseMs ?? 20);
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }

  /**
   * Errors an application would see: everything but refused connections,
   * which carried nothing and which a client retries on another broker at once
   * (here: the pod stopped listening before the sampler saw it not Ready).
   */
  applicationErrors(): number {
    return this.errors - (this.errorKinds.get("ECONNREFUSED") ?? 0);
  }

  /** The produce error rate in percent of attempts. */
  errorRate(): number {
    return this.attempts === 0 ? 0 : (100 * this.errors) / this.attempts;
  }

  summary(): string {
    const kinds = [...this.errorKinds].map(([k, v]) => `${k}×${v}`).join(", ") || "none";
    return `${this.acked.size} acked (202) of ${this.attempts} attempts, the slowest in ${(this.maxAckMs / 1000).toFixed(1)} s; ${this.errors} errors (${this.errorRate().toFixed(2)}%: ${kinds}); ${this.ambiguous.size} ambiguous`;
  }
}

/**
 * Every record of the topic, read from one broker: key → count. `partitions`
 * is the partition count (all of them) or the partitions to read.
 */
export async function readTopic(
  ip: string,
  topic: string,
  partitions: number | readonly number[],
  headers: HeaderSource = noHeaders,
): Promise<Map<string, number> | undefined> {
  const seen = new Map<string, number>();
  const list = typeof partitions === "number" ? [...Array(partitions).keys()] : partitions;
  for (const p of list) {
    let offset = 0;
    for (;;) {
      const r = await fetch(
        `http://${ip}:${BROKER_PORT}/v1/topics/${topic}/records?partition=${p}&offset=${offset}&limit=1000`,
        { headers: headers(), signal: AbortSignal.timeout(10_000) },
      );
      if (r.status !== 200) {
        await r.body?.cancel();
        return undefined;
      }
      const body = (await r.json()) as { next_offset: number; records: Array<{ key: string }> };
      for (const rec of body.records) seen.set(rec.key, (seen.get(rec.key) ?? 0) + 1);
      if (body.records.length === 0) break;
      offset = body.next_offset;
    }
  }
  return seen;
}

/** A broker metric summed over its label sets (0 when absent). */
export async function metricSum(
  ip: string,
  name: string,
  headers: HeaderSource = noHeaders,
): Promise<number> {
  const r = await fetch(`http://${ip}:${BROKER_PORT}/metrics`, {
    headers: headers(),
    signal: AbortSignal.timeout(5_000),
  });
  let sum = 0;
  for (const line of (await r.text()).split("\n"))
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(" ").pop());
  return sum;
}

export interface LedgerReport {
  acked: number;
  distinctRead: number;
  /** Acknowledged ids never read back (must be empty). */
  lost: string[];
  /** Ids read back more than once, as `id×count`. */
  duplicated: string[];
  /** Ids read back that were neither acknowledged nor ambiguous (must be empty). */
  unknown: string[];
  ambiguous: number;
  ambiguousPresent: number;
  line: string;
}

/**
 * Waits (up to timeoutMs) until every acknowledged id is readable through
 * `ip`, then counts lost, duplicated and unknown ids of this producer's tag.
 */
export async function checkLedger(
  producer: LoadProducer,
  opts: { ip: string; topic: string; partitions: number; headers?: HeaderSource; timeoutMs?: number },
): Promise<LedgerReport> {
  let last: Map<string, number> | undefined;
  try {
    await waitFor(
      async () => {
        last = await readTopic(opts.ip, opts.topic, opts.partitions, opts.headers);
        if (last === undefined) return false;
        const seen = last;
        return [...producer.acked].every((id) => seen.has(id));
      },
      {
        timeoutMs: opts.timeoutMs ?? 60_000,
        what: `every acked ${producer.tag} record to be readable`,
        intervalMs: 1000,
      },
    );
  } catch {
    // fall through: the report says precisely what is missing
  }
  const seen = last ?? new Map<string, number>();
  const mine = [...seen].filter(([k]) => k.startsWith(`${producer.tag}-`));
  const lost = [...producer.acked].filter((id) => !seen.has(id));
  const duplicated = mine.filter(([, n]) => n > 1).map(([k, n]) => `${k}×${n}`);
  const unknown = mine.filter(([k]) => !producer.acked.has(k) && !producer.ambiguous.has(k)).map(([k]) => k);
  const ambiguousPresent = [...producer.ambiguous].filter((k) => seen.has(k)).length;
  const line = `${producer.tag}: ${producer.acked.size} acked, ${mine.length} distinct read back, lost ${lost.length}, duplicated ${duplicated.length}, ambiguous ${producer.ambiguous.size} (of which present ${ambiguousPresent})`;
  return {
    acked: producer.acked.size,
    distinctRead: mine.length,
    lost,
    duplicated,
    unknown,
    ambiguous: producer.ambiguous.size,
    ambiguousPresent,
    line,
  };
}

export interface QueueConsumerOptions {
  topic: string;
  group: string;
  /** The brokers to consume from (e.g. the Ready pods' IPs). */
  ips: () => string[];
  workers?: number;
  headers?: HeaderSource;
  /** Long-poll wait per consume call (a Go duration). */
  wait?: string;
}

/**
 * Queue consumer with a delivery ledger: consume (lease) → record the key →
 * ack with the receipt handle, round-robin over the given brokers. A message
 * delivered again (its ack lost to a kill -9, or its lease expired) counts as
 * a redelivery: queue consumption is at-least-once by design.
 */
export class QueueConsumer {
  /** key → times delivered. */
  readonly delivered = new Map<string, number>();
  acks = 0;
  ackFailures = 0;
  readonly errorKinds = new Map<string, number>();
  #running = true;
  #rr = 0;
  readonly #workers: Promise<void>[];
  readonly #opts: QueueConsumerOptions;

  constructor(opts: QueueConsumerOptions) {
    this.#opts = opts;
    this.#workers = Array.from({ length: opts.workers ?? 3 }, () => this.#work());
  }

  #err(kind: string): void {
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }

  async #work(): Promise<void> {
    const headers = this.#opts.headers ?? noHeaders;
    const base = (ip: string) => `http://${ip}:${BROKER_PORT}/v1/topics/${this.#opts.topic}`;
    while (this.#running) {
      const ips = this.#opts.ips();
      const ip = ips[this.#rr++ % Math.max(1, ips.length)];
      if (ip === undefined) {
        await sleep(100);
        continue;
      }
      try {
        const r = await fetch(
          `${base(ip)}/consume?group=${this.#opts.group}&wait=${this.#opts.wait ?? "1s"}`,
          {
            headers: headers(),
            signal: AbortSignal.timeout(15_000),
          },
        );
        if (r.status === 204) {
          await r.body?.cancel();
          continue;
        }
        if (r.status !== 200) {
          await r.body?.cancel();
          this.#err(`consume HTTP ${r.status}`);
          await sleep(100);
          continue;
        }
        const m = (await r.json()) as { key: string; receipt_handle: string };
        this.delivered.set(m.key, (this.delivered.get(m.key) ?? 0) + 1);
        const a = await fetch(`${base(ip)}/ack?receipt_handle=${encodeURIComponent(m.receipt_handle)}`, {
          method: "POST",
          headers: headers(),
          signal: AbortSignal.timeout(10_000),
        });
        await a.body?.cancel();
        if (a.status === 204) this.acks++;
        else {
          this.ackFailures++;
          this.#err(`ack HTTP ${a.status}`);
        }
      } catch (err) {
        this.#err((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name);
        await sleep(100);
      }
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }

  /** Deliveries beyond the first, summed over keys. */
  redeliveries(): number {
    let n = 0;
    for (const c of this.delivered.values()) n += c - 1;
    return n;
  }

  summary(): string {
    const kinds = [...this.errorKinds].map(([k, v]) => `${k}×${v}`).join(", ") || "none";
    return `${this.delivered.size} distinct delivered, ${this.redeliveries()} redeliveries, ${this.acks} acks, ${this.ackFailures} ack failures; errors: ${kinds}`;
  }
}
