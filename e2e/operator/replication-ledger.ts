// Load and ledger for the replication suites (e2e/operator/replication-*.e2e.test.ts,
// e2e/chaos/replication-chaos.e2e.test.ts): an acks=all producer that keeps,
// for every 200, the partition and offset the answer gave and the broker that
// answered; a queue consumer that tells a redelivery of a record it never
// acked from one it had acked; the read-back that checks every acknowledged
// record is stored once, at the offset its answer gave; and the byte-for-byte
// comparison of a partition's replicas on their volumes (PVC directories of
// the local platform).
import { readdir, readFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api } from "@kubernetes/client-node";
import type { PartitionAssignment } from "../../packages/api/src/v1alpha1/types.ts";
import { waitFor } from "./harness.ts";
import { BROKER_PORT, type HeaderSource } from "./load.ts";

/** One acknowledged record: where the 200 put it and who answered. */
export interface Ack {
  partition: number;
  offset: number;
  /** The broker (pod IP) that answered 200. */
  ip: string;
  /** When the request was sent, and when its 200 arrived. */
  sentAtMs: number;
  atMs: number;
}

export interface AcksAllProducerOptions {
  tag: string;
  topic: string;
  /** The brokers to produce through. */
  ips: () => string[];
  headers: HeaderSource;
  workers?: number;
  /** Records per request: 1 = POST produce, more = POST produce-batch (ndjson). */
  batch?: number;
  /** Pin every record to this partition (otherwise it is placed by its key). */
  partition?: number;
  /**
   * Pin worker w's records to partition w % pinWorkers: a partition whose
   * leader is gone then holds up only its own workers (an acks=all request
   * waits up to 30 s), so each partition's stall is measured apart.
   */
  pinWorkers?: number;
  pauseMs?: number;
  /** Padding added to each record's JSON payload (bytes). */
  payloadBytes?: number;
  /** Stop after this many records were acknowledged. */
  limit?: number;
  /** Client timeout of one request; above the broker's acks=all wait (30 s) so its 503 arrives. */
  timeoutMs?: number;
  /**
   * Every request on a new connection (node:http, no keep-alive) instead of
   * fetch's pool: a connection opened after a network cut is on the cut's
   * terms (loopback-partition.ts), a pooled one from before is not.
   */
  freshSockets?: boolean;
}

/** One POST on a connection of its own; resolves with the status and body, rejects like fetch (err.cause.code). */
export function postFresh(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", (err) => reject(Object.assign(new Error("response failed"), { cause: err })));
    });
    req.setTimeout(timeoutMs, () =>
      req.destroy(Object.assign(new Error("timeout"), { code: "TimeoutError" })),
    );
    req.on("error", (err) => reject(Object.assign(new Error("request failed"), { cause: err })));
    req.end(body);
  });
}

/** Codes of a 503 answered before anything reached a WAL: the same ids are sent again. */
const REFUSED_BEFORE_WAL = new Set([
  "not_enough_replicas",
  "acks_all_unavailable",
  "draining",
  "wal_poisoned",
  "producer_registry_stale",
  "owner_down",
  "unavailable",
]);

/**
 * Continuous acks=all produce. A 200 acknowledges every record of the request
 * with its offset. Refusals before the WAL (429, a 503 other than
 * commit_timeout, a refused connection) are sent again with the same ids,
 * on the next broker. A 503 commit_timeout (the records are in a WAL and will
 * still be committed), a timeout or a reset is in doubt: its ids may be
 * stored at most once and are not sent again.
 */
export class AcksAllProducer {
  readonly acked = new Map<string, Ack>();
  readonly ambiguous = new Set<string>();
  /** (partition/offset) → ids acknowledged there: more than one is a divergence. */
  readonly byOffset = new Map<string, string[]>();
  attempts = 0;
  /** Requests sent and not answered yet. */
  inFlight = 0;
  readonly errorKinds = new Map<string, number>();
  /** Every 200 in order of arrival (for stall measurements). */
  readonly ackTimes: Array<{ atMs: number; partition: number; ip: string }> = [];
  /** Every failed attempt (when it was sent and answered, broker, kind). */
  readonly failures: Array<{ sentAtMs: number; atMs: number; ip: string; kind: string }> = [];
  readonly tag: string;
  #running = true;
  #rr = 0;
  readonly #workers: Promise<void>[];
  readonly #o: AcksAllProducerOptions;

  constructor(o: AcksAllProducerOptions) {
    this.#o = o;
    this.tag = o.tag;
    this.#workers = Array.from({ length: o.workers ?? 4 }, (_, w) => this.#work(w));
  }

  #pick(): string | undefined {
    const ips = this.#o.ips();
    if (ips.length === 0) return undefined;
    return ips[this.#rr++ % ips.length];
  }

  #err(ip: string, kind: string, sentAtMs: number): void {
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
    this.failures.push({ sentAtMs, atMs: Date.now(), ip, kind });
  }

  async #send(
    ip: string,
    ids: string[],
    partition: number | undefined,
  ): Promise<"acked" | "retry" | "doubt"> {
    const o = this.#o;
    const batch = (o.batch ?? 1) > 1;
    const pin = partition === undefined ? "" : `&partition=${partition}`;
    const url = batch
      ? `http://${ip}:${BROKER_PORT}/v1/topics/${o.topic}/produce-batch?acks=all`
      : `http://${ip}:${BROKER_PORT}/v1/topics/${o.topic}/produce?acks=all&key=${ids[0]}${pin}`;
    const pad = o.payloadBytes === undefined ? {} : { pad: "x".repeat(o.payloadBytes) };
    const body = batch
      ? ids
          .map((id) =>
            JSON.stringify(
              partition === undefined
                ? { key: id, payload: { id, ...pad } }
                : { key: id, partition, payload: { id, ...pad } },
            ),
          )
          .join("\n")
      : JSON.stringify({ id: ids[0], ...pad });
    this.attempts++;
    this.inFlight++;
    try {
      return await this.#request(ip, ids, url, body, batch, Date.now());
    } finally {
      this.inFlight--;
    }
  }

  async #request(
    ip: string,
    ids: string[],
    url: string,
    body: string,
    batch: boolean,
    sentAtMs: number,
  ): Promise<"acked" | "retry" | "doubt"> {
    const o = this.#o;
    let r: { status: number; text: string };
    const headers = { ...o.headers(), ...(batch ? { "content-type": "application/x-ndjson" } : {}) };
    const timeoutMs = o.timeoutMs ?? 40_000;
    try {
      if (o.freshSockets === true) r = await postFresh(url, body, headers, timeoutMs);
      else {
        const res = await fetch(url, {
          method: "POST",
          body,
          headers,
          signal: AbortSignal.timeout(timeoutMs),
        });
        r = { status: res.status, text: await res.text() };
      }
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      if (code === "ECONNREFUSED") {
        this.#err(ip, "ECONNREFUSED", sentAtMs);
        return "retry";
      }
      this.#err(ip, code ?? (err as Error).name, sentAtMs);
      return "doubt";
    }
    const text = r.text;
    if (r.status === 200) {
      const atMs = Date.now();
      const parsed = JSON.parse(text) as
        | { partition: number; offset: number }
        | { results: Array<{ partition: number; offset: number }> };
      const results = "results" in parsed ? parsed.results : [parsed];
      ids.forEach((id, i) => {
        const res = results[i]!;
        this.acked.set(id, { partition: res.partition, offset: res.offset, ip, sentAtMs, atMs });
        const k = `${res.partition}/${res.offset}`;
        const list = this.byOffset.get(k) ?? [];
        list.push(id);
        this.byOffset.set(k, list);
        this.ackTimes.push({ atMs, partition: res.partition, ip });
      });
      return "acked";
    }
    let code = "";
    try {
      code = (JSON.parse(text) as { code?: string }).code ?? "";
    } catch {
      // not JSON
    }
    this.#err(ip, `HTTP ${r.status}${code === "" ? "" : ` ${code}`}`, sentAtMs);
    if (r.status === 429) return "retry";
    if (r.status === 503 && code !== "commit_timeout" && (code === "" || REFUSED_BEFORE_WAL.has(code)))
      return "retry";
    if (r.status === 503 || r.status === 504) return "doubt";
    throw new Error(`produce ${ids[0]}: unexpected HTTP ${r.status} ${text}`);
  }

  async #work(w: number): Promise<void> {
    let n = 0;
    const size = this.#o.batch ?? 1;
    while (this.#running) {
      if (this.#o.limit !== undefined && this.acked.size >= this.#o.limit) break;
      const ids = Array.from({ length: size }, () => `${this.tag}-w${w}-${n++}`);
      while (this.#running) {
        const ip = this.#pick();
        if (ip === undefined) {
          await sleep(100);
          continue;
        }
        const partition = this.#o.pinWorkers !== undefined ? w % this.#o.pinWorkers : this.#o.partition;
        const out = await this.#send(ip, ids, partition);
        if (out === "retry") {
          await sleep(100);
          continue;
        }
        if (out === "doubt") for (const id of ids) this.ambiguous.add(id);
        break;
      }
      await sleep(this.#o.pauseMs ?? 10);
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }

  /** Offsets acknowledged with more than one id (must be empty). */
  conflicts(): string[] {
    return [...this.byOffset].filter(([, ids]) => ids.length > 1).map(([k, ids]) => `${k}: ${ids.join(",")}`);
  }

  summary(): string {
    const kinds = [...this.errorKinds].map(([k, v]) => `${k}×${v}`).join(", ") || "none";
    return `${this.acked.size} acked (200) in ${this.attempts} requests; errors: ${kinds}; ${this.ambiguous.size} in doubt`;
  }

  /**
   * The longest time without a 200 for `partition` within [from, to]: the
   * largest gap between consecutive 200s, the window's ends counting as ones
   * only when a 200 came before `from` (so the gap before the first 200 after
   * a fault counts from the last one before it).
   */
  stall(partition: number, from: number, to: number): number {
    return maxGap(
      this.ackTimes.filter((a) => a.partition === partition).map((a) => a.atMs),
      from,
      to,
    );
  }

  /** The longest time without a 200 for any partition within [from, to], and where it starts. */
  longestSilence(from: number, to: number): { gap: number; startMs: number } {
    return maxGapAt(
      this.ackTimes.map((a) => a.atMs),
      from,
      to,
    );
  }

  /** The last 200 for `partition` at or before `atMs`. */
  lastAckBefore(partition: number, atMs: number): number | undefined {
    let last: number | undefined;
    for (const a of this.ackTimes)
      if (a.partition === partition && a.atMs <= atMs && (last === undefined || a.atMs > last)) last = a.atMs;
    return last;
  }

  /** The first 200 for `partition` after `atMs`. */
  firstAckAfter(partition: number, atMs: number): number | undefined {
    let first: number | undefined;
    for (const a of this.ackTimes)
      if (a.partition === partition && a.atMs > atMs && (first === undefined || a.atMs < first))
        first = a.atMs;
    return first;
  }
}

export interface AckingConsumerOptions {
  topic: string;
  group: string;
  ips: () => string[];
  headers: HeaderSource;
  workers?: number;
  wait?: string;
}

/**
 * Queue consumption (consume → ack) with a ledger of deliveries. A record
 * delivered again is a redelivery: of a record whose ack was never answered
 * 204 (the lease expired or died with a broker), or of one that was (the
 * frontier had not reached a surviving copy: counted apart).
 */
export class AckingConsumer {
  /** key → times delivered. */
  readonly delivered = new Map<string, number>();
  /** Keys whose ack was answered 204. */
  readonly ackedKeys = new Set<string>();
  /** Deliveries of a key after its ack was answered 204. */
  redeliveredAfterAck = 0;
  /** Those keys, in order. */
  readonly redeliveredAcks: string[] = [];
  /** Each such delivery: when, where, and when the earlier ack was answered. */
  readonly redeliveredAckEvents: Array<{
    key: string;
    partition: number;
    offset: number;
    atMs: number;
    ackedAtMs: number;
  }> = [];
  /** key → when its (first) ack was answered 204. */
  readonly ackedAt = new Map<string, number>();
  /** Deliveries (time, partition) for gap measurements. */
  readonly deliveries: Array<{ atMs: number; partition: number }> = [];
  ackFailures = 0;
  readonly errorKinds = new Map<string, number>();
  #running = true;
  #rr = 0;
  readonly #workers: Promise<void>[];
  readonly #o: AckingConsumerOptions;

  constructor(o: AckingConsumerOptions) {
    this.#o = o;
    this.#workers = Array.from({ length: o.workers ?? 3 }, () => this.#work());
  }

  #err(kind: string): void {
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }

  async #work(): Promise<void> {
    const o = this.#o;
    const base = (ip: string) => `http://${ip}:${BROKER_PORT}/v1/topics/${o.topic}`;
    while (this.#running) {
      const ips = o.ips();
      const ip = ips[this.#rr++ % Math.max(1, ips.length)];
      if (ip === undefined) {
        await sleep(100);
        continue;
      }
      try {
        const r = await fetch(`${base(ip)}/consume?group=${o.group}&wait=${o.wait ?? "1s"}`, {
          headers: o.headers(),
          signal: AbortSignal.timeout(15_000),
        });
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
        const m = (await r.json()) as {
          key: string;
          partition: number;
          offset: number;
          receipt_handle: string;
        };
        this.delivered.set(m.key, (this.delivered.get(m.key) ?? 0) + 1);
        if (this.ackedKeys.has(m.key)) {
          this.redeliveredAfterAck++;
          this.redeliveredAcks.push(m.key);
          this.redeliveredAckEvents.push({
            key: m.key,
            partition: m.partition,
            offset: m.offset,
            atMs: Date.now(),
            ackedAtMs: this.ackedAt.get(m.key) ?? 0,
          });
        }
        this.deliveries.push({ atMs: Date.now(), partition: m.partition });
        const a = await fetch(`${base(ip)}/ack?receipt_handle=${encodeURIComponent(m.receipt_handle)}`, {
          method: "POST",
          headers: o.headers(),
          signal: AbortSignal.timeout(10_000),
        });
        await a.body?.cancel();
        if (a.status === 204) {
          this.ackedKeys.add(m.key);
          if (!this.ackedAt.has(m.key)) this.ackedAt.set(m.key, Date.now());
        } else {
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

  redeliveries(): number {
    let n = 0;
    for (const c of this.delivered.values()) n += c - 1;
    return n;
  }

  /** The longest time without a delivery from `partition` within [from, to] (as AcksAllProducer.stall). */
  gap(partition: number, from: number, to: number): number {
    return maxGap(
      this.deliveries.filter((d) => d.partition === partition).map((d) => d.atMs),
      from,
      to,
    );
  }

  /** For each redelivery of a record whose ack had been answered: how long before `atMs` that ack was. */
  ackAgesAt(atMs: number): number[] {
    return this.redeliveredAcks.map((k) => atMs - (this.ackedAt.get(k) ?? atMs));
  }

  /** The first delivery from `partition` after `atMs`. */
  firstDeliveryAfter(partition: number, atMs: number): number | undefined {
    let first: number | undefined;
    for (const d of this.deliveries)
      if (d.partition === partition && d.atMs > atMs && (first === undefined || d.atMs < first))
        first = d.atMs;
    return first;
  }

  summary(): string {
    const kinds = [...this.errorKinds].map(([k, v]) => `${k}×${v}`).join(", ") || "none";
    return `${this.delivered.size} distinct delivered, ${this.redeliveries()} redeliveries (${this.redeliveredAfterAck} of records whose ack was answered), ${this.ackedKeys.size} acked, ${this.ackFailures} ack failures; errors: ${kinds}`;
  }
}

/** The largest gap between consecutive times within [from, to] (see AcksAllProducer.stall). */
function maxGap(times: readonly number[], from: number, to: number): number {
  return maxGapAt(times, from, to).gap;
}

/** The largest gap between consecutive times within [from, to], and where it starts. */
export function maxGapAt(
  times: readonly number[],
  from: number,
  to: number,
): { gap: number; startMs: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let prev = from;
  for (const t of sorted) if (t <= from) prev = t;
  let worst = { gap: 0, startMs: from };
  const offer = (t: number) => {
    if (t - prev > worst.gap) worst = { gap: t - prev, startMs: prev };
  };
  for (const t of sorted) {
    if (t <= from) continue;
    if (t > to) break;
    offer(t);
    prev = t;
  }
  offer(to);
  return worst;
}

/** Every record of one partition read through `ip`: offset → key. Undefined when a read fails. */
export async function readPartition(
  ip: string,
  topic: string,
  partition: number,
  headers: HeaderSource,
): Promise<Map<number, string> | undefined> {
  const out = new Map<number, string>();
  let offset = 0;
  for (;;) {
    const r = await fetch(
      `http://${ip}:${BROKER_PORT}/v1/topics/${topic}/records?partition=${partition}&offset=${offset}&limit=1000`,
      { headers: headers(), signal: AbortSignal.timeout(10_000) },
    ).catch(() => undefined);
    if (r?.status !== 200) {
      await r?.body?.cancel();
      return undefined;
    }
    const body = (await r.json()) as { next_offset: number; records: Array<{ key: string; offset: number }> };
    for (const rec of body.records) out.set(rec.offset, rec.key);
    if (body.records.length === 0) return out;
    offset = body.next_offset;
  }
}

export interface AcksAllLedgerReport {
  acked: number;
  /** Acknowledged ids not found. */
  lost: string[];
  /** Ids of this producer stored more than once (`id×n`). */
  duplicated: string[];
  /** Acknowledged ids found at another offset than their 200 said (`id: p/acked → p/found`). */
  misplaced: string[];
  /** Offsets acknowledged to two different ids. */
  conflicts: string[];
  /** Ids found that were neither acknowledged nor in doubt. */
  unknown: string[];
  ambiguous: number;
  ambiguousPresent: number;
  records: number;
  line: string;
}

/**
 * Reads every partition through `ip` (waiting up to timeoutMs until every
 * acknowledged id is there) and checks the producer's ledger against it.
 */
export async function checkAcksAllLedger(
  p: AcksAllProducer,
  o: { ip: string; topic: string; partitions: number; headers: HeaderSource; timeoutMs?: number },
): Promise<AcksAllLedgerReport> {
  let logs: Array<Map<number, string>> = [];
  const readAll = async () => {
    const out: Array<Map<number, string>> = [];
    for (let q = 0; q < o.partitions; q++) {
      const m = await readPartition(o.ip, o.topic, q, o.headers);
      if (m === undefined) return undefined;
      out.push(m);
    }
    return out;
  };
  try {
    await waitFor(
      async () => {
        const r = await readAll();
        if (r === undefined) return false;
        logs = r;
        const keys = new Set(r.flatMap((m) => [...m.values()]));
        return [...p.acked.keys()].every((id) => keys.has(id));
      },
      {
        timeoutMs: o.timeoutMs ?? 120_000,
        what: `every acked ${p.tag} record to be readable`,
        intervalMs: 1000,
      },
    );
  } catch {
    // the report says what is missing
  }
  const found = new Map<string, Array<{ partition: number; offset: number }>>();
  let records = 0;
  logs.forEach((m, partition) => {
    for (const [offset, key] of m) {
      records++;
      if (!key?.startsWith(`${p.tag}-`)) continue;
      const list = found.get(key) ?? [];
      list.push({ partition, offset });
      found.set(key, list);
    }
  });
  const lost: string[] = [];
  const misplaced: string[] = [];
  for (const [id, a] of p.acked) {
    const at = found.get(id);
    if (at === undefined) lost.push(id);
    else if (!at.some((x) => x.partition === a.partition && x.offset === a.offset))
      misplaced.push(
        `${id}: ${a.partition}/${a.offset} → ${at.map((x) => `${x.partition}/${x.offset}`).join(",")}`,
      );
  }
  const duplicated = [...found].filter(([, at]) => at.length > 1).map(([id, at]) => `${id}×${at.length}`);
  const unknown = [...found.keys()].filter((id) => !p.acked.has(id) && !p.ambiguous.has(id));
  const ambiguousPresent = [...p.ambiguous].filter((id) => found.has(id)).length;
  const conflicts = p.conflicts();
  const line = `${p.tag}: ${p.acked.size} acked, ${found.size} distinct read back (${records} records), lost ${lost.length}, duplicated ${duplicated.length}, misplaced ${misplaced.length}, offset conflicts ${conflicts.length}, unknown ${unknown.length}, in doubt ${p.ambiguous.size} (of which stored ${ambiguousPresent})`;
  return {
    acked: p.acked.size,
    lost,
    duplicated,
    misplaced,
    conflicts,
    unknown,
    ambiguous: p.ambiguous.size,
    ambiguousPresent,
    records,
    line,
  };
}

/** The data dir of a broker pod's volume on the node (the PV's hostPath + /data). */
export async function brokerDataDir(core: CoreV1Api, namespace: string, pod: string): Promise<string> {
  const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace, name: `data-${pod}` });
  const pv = await core.readPersistentVolume({ name: pvc.spec?.volumeName as string });
  const dir = pv.spec?.hostPath?.path;
  if (dir === undefined || dir === "") throw new Error(`no hostPath for data-${pod}`);
  return join(dir, "data");
}

/** A partition's log on one replica's volume: its segment files, in offset order, concatenated. */
export async function replicaBytes(dataDir: string, topic: string, partition: number): Promise<Buffer> {
  const dir = join(dataDir, "topics", topic, `p${String(partition).padStart(5, "0")}`);
  const names = (await readdir(dir).catch(() => [] as string[]))
    .filter((n) => /^\d{20}\.log$/.test(n))
    .sort();
  return Buffer.concat(await Promise.all(names.map((n) => readFile(join(dir, n)))));
}

/** The leader-epochs file of a replica ("epoch start" lines), empty when absent. */
export async function replicaEpochs(
  dataDir: string,
  topic: string,
  partition: number,
): Promise<Array<{ epoch: number; start: number }>> {
  const dir = join(dataDir, "topics", topic, `p${String(partition).padStart(5, "0")}`);
  const text = await readFile(join(dir, "leader-epochs"), "utf8").catch(() => "");
  return text
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((xs) => xs.length >= 2 && xs.every(Number.isFinite))
    .map(([epoch, start]) => ({ epoch: epoch!, start: start! }));
}

/**
 * Compares every replica of each partition byte for byte (their segments
 * concatenated). Returns one line per partition and the mismatches.
 */
export async function compareReplicas(
  records: readonly PartitionAssignment[],
  dataDirOf: (member: string) => Promise<string>,
  topic: string,
): Promise<{ lines: string[]; mismatches: string[] }> {
  const lines: string[] = [];
  const mismatches: string[] = [];
  for (const a of records) {
    const copies: Array<{ member: string; bytes: Buffer }> = [];
    for (const m of a.replicas ?? [])
      copies.push({ member: m, bytes: await replicaBytes(await dataDirOf(m), topic, a.partition) });
    const first = copies[0];
    const same = copies.every((c) => first !== undefined && c.bytes.equals(first.bytes));
    lines.push(
      `p${a.partition}: ${copies.map((c) => `${c.member} ${c.bytes.length} B`).join(", ")}${same ? " identical" : " DIFFER"}`,
    );
    if (!same) mismatches.push(`p${a.partition}`);
  }
  return { lines, mismatches };
}

/** Percentiles of a list of numbers (ms). */
export function spread(xs: readonly number[]): string {
  if (xs.length === 0) return "none";
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return `min ${s[0]} / median ${at(0.5)} / max ${s[s.length - 1]} ms (n=${s.length})`;
}
