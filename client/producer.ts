// The batching producer. Records go into one accumulator per partition; a
// batch is sealed when it holds batchSize records or maxBatchBytes, or
// lingerMs after its first record, and sent as one binary produce-batch.
//
// Partitioning matches the broker: an explicit partition wins, a key hashes
// with the broker's FNV-1a, keyless records stick to one partition until a
// batch of it succeeded, then move on to the next partition.
//
// The buffer is bounded: send() waits for space while maxBufferedRecords or
// maxBufferBytes are buffered or in flight, up to maxBlockMs, then throws
// BufferFullError. A record not delivered within deliveryTimeoutMs of send()
// fails with DeliveryTimeoutError (checked before each attempt of its batch,
// and as the request's abort signal).
//
// Acknowledgements (`acks`): "wal" (default: the broker answers after its WAL
// fsync, no offsets), "all" (after the partition owner committed the batch:
// each record's delivery carries its offset), "0" (answered on receipt, no
// promise at all). A plain producer keeps one batch in flight per partition,
// so retries cannot reorder its records.
//
// Idempotent mode ({ idempotent: true }, implies acks "all"): the identity
// (producer id, epoch) comes from the broker (POST /v1/producers, optionally
// with `producerName`: re-initialising a name fences every earlier instance).
// Up to maxInFlight (default 5, the broker remembers 5 batches) batches per
// partition are in flight. A batch's sequences are fixed when it is first
// sent (the partition's next ones) and every retry re-sends the same bytes
// with the same (id, epoch, seq), so the owner answers a retry with its
// original offsets. The owner accepts only the next sequence, so order holds:
//
//   - out_of_order_sequence for an attempt sent while an earlier batch of the
//     partition was unanswered: it was overtaken (another connection, a
//     retry, the proxy); wait for the earlier batches, then send it again;
//   - out_of_order_sequence with nothing earlier pending (the owner lost the
//     producer's state, or an earlier batch failed for good and was not
//     stored), or unknown_producer_id (the registry does not know the id):
//     re-initialise: stop sending, let the requests in flight finish, get a
//     new identity (the name's next epoch, or a new id), re-number every
//     unanswered batch from seq 0 in its partition's order and send them
//     again. Only batches no old attempt can still store are re-numbered: one
//     known stored resolves (offset null), one with an unanswered attempt
//     that no refusal proved unstored fails with DeliveryInDoubtError (that
//     attempt may land late once the gap before it fills; an unnamed id is
//     never fenced, a name's epoch only once the bump is answered).
//     A batch refused again after two re-initialisations fails with the error;
//   - producer_fenced: another instance took the name. Never retried or
//     re-initialised: the producer closes and every pending and later send
//     fails with FencedProducerError.
//
// Every error a delivery is rejected with says `notStored` (a re-send is
// safe) or `inDoubt` (client/delivery-outcome.ts decides per attempt). A
// batch that fails in doubt as its partition's last numbered batch fails at
// once and the next sequence goes back to its first, so a re-send of the same
// records in the same order gets the same sequences (and the original
// offsets if it was stored). One that fails in doubt with later batches
// numbered after it is held instead (a re-send would carry new sequences):
// it keeps its sequences and is retried exactly for one more
// deliveryTimeoutMs, no new batch of its partition is numbered meanwhile, and
// it settles as stored (an answer, or a later batch accepted: offsets or
// null), not stored (its retry refused with nothing earlier pending, and no
// batch of its partition left in doubt under its identity: rejected notStored
// after a re-init; else inDoubt), or DeliveryInDoubtError when nothing answered.

import { attemptOutcome, flagged } from "./delivery-outcome.ts";
import {
  BadRequestError,
  BufferFullError,
  ClosedError,
  DeliveryInDoubtError,
  DeliveryTimeoutError,
  FencedProducerError,
  type NaradError,
  OutOfOrderSequenceError,
  PayloadTooLargeError,
  UnknownProducerIdError,
} from "./errors.ts";
import type { ClientHandle } from "./handle.ts";
import { type Reply, sleep } from "./transport.ts";
import { payloadBytes } from "./types.ts";
import { createRotator, encodeBinaryBatch, partitionForKey } from "./wire.ts";

export interface ProducerOptions {
  /** Records per batch. Default 1000. */
  batchSize?: number;
  /** Bytes of payload + key per batch. Default 4 MiB. */
  maxBatchBytes?: number;
  /** How long a batch waits for more records. Default 5 ms. */
  lingerMs?: number;
  /** Records buffered or in flight before send() waits. Default 20,000. */
  maxBufferedRecords?: number;
  /** Bytes (payload + key) buffered or in flight before send() waits. Default 32 MiB. */
  maxBufferBytes?: number;
  /** How long send() waits for buffer space before BufferFullError. Default 60 s. */
  maxBlockMs?: number;
  /** A record not delivered this long after send() fails with DeliveryTimeoutError. Default 120 s. */
  deliveryTimeoutMs?: number;
  /** "wal" (default), "all" (offsets in deliveries; forced by idempotent) or "0". */
  acks?: "0" | "wal" | "all";
  /** Retries of a batch after 503/429/network errors. Default: the client's. */
  retries?: number;
  /** First backoff step (doubles per retry). Default: the client's. */
  backoffMs?: number;
  /** Refused at send() above this (the broker's default limit). Default 1 MiB. */
  maxRecordBytes?: number;
  /** Partition count is re-read after this. Default 30 s. */
  metadataMaxAgeMs?: number;
  /**
   * Stamp batches with (producerId, epoch, per-partition seq) so retries never
   * store a record twice. Default false.
   */
  idempotent?: boolean;
  /**
   * Idempotent: batches in flight per partition (1-5; the broker remembers
   * the results of 5). Default 5. A plain producer always keeps 1.
   */
  maxInFlight?: number;
  /**
   * Idempotent: the stable name of this producer (1-128 of [A-Za-z0-9._-]).
   * The broker keeps its id; each new producer with the name gets the next
   * epoch and fences the previous one. Default: none (a fresh id).
   */
  producerName?: string;
}

export interface SendOptions {
  key?: string | Uint8Array;
  partition?: number;
}

export interface Delivery {
  topic: string;
  partition: number;
  /** acks "all": the record's offset (null when the broker no longer knew it for a retried record). */
  offset?: number | null;
}

/** Counters of one producer. */
export interface ProducerMetrics {
  recordsSent: number;
  recordsRetried: number;
  recordsFailed: number;
  batchesSent: number;
  /** Mean records per sent batch. */
  batchSizeAvg: number;
  bufferedBytes: number;
  bufferedRecords: number;
  /** Mean and last produce-batch request latency (ms, all attempts of a batch). */
  requestLatencyAvgMs: number;
  requestLatencyLastMs: number;
  /** Idempotent: identities taken after the first (unknown id, out-of-order sequence). */
  reinits: number;
  /** Idempotent: most batches of one partition in flight at once so far. */
  maxInFlightSeen: number;
  /** Idempotent: batches held after failing in doubt with later batches numbered after them. */
  batchesHeld: number;
}

export interface Sent {
  partition: number;
  /** Resolves when the record's batch got 202 (on the broker's disk); rejects with a typed error. */
  delivered: Promise<Delivery>;
}

interface Pending {
  key: Buffer;
  payload: Buffer;
  deadlineMs: number;
  resolve: (d: Delivery) => void;
  reject: (err: unknown) => void;
}

interface Batch {
  partition: number;
  records: Pending[];
  bytes: number;
  timer: NodeJS.Timeout | undefined;
  /** Its linger passed while the partition had a batch in flight. */
  due: boolean;
  /** Idempotent mode: producer seq of the batch's first record, fixed when first sent. */
  firstSeq?: number;
  /** Idempotent mode: the identity generation its seqs belong to (bumped by each re-init). */
  gen?: number;
  /** Idempotent mode: the records it carries on every attempt (fixed when first sent). */
  live?: Pending[];
  /** An attempt (with these seqs) may have stored it: no answer, or commit_timeout. */
  unsure?: boolean;
  /** A later batch of its partition was accepted, so it was stored (the owner takes only the next seq). */
  stored?: boolean;
  /** Held: failed in doubt with later batches numbered after it; settled by this time. */
  holdUntil?: number;
  /** Held and counted in #holding (a re-init waits for it). */
  held?: boolean;
  /** Its latest attempt was refused with nothing earlier pending, and that refusal proves it not stored. */
  provenRefused?: boolean;
  /** Taken out of its lane by a re-init (not re-numbered): settled by its run loop. */
  outcome?: "stored" | "doubt";
}

const noop = () => {};
/** POST /v1/producers may wait out the brokers' fence lease (--producer-fence-lease-ms, at most 60 s). */
const producerInitTimeoutMs = 90_000;
const emptyKey = Buffer.alloc(0);

export class Producer {
  readonly topic: string;
  readonly #client: ClientHandle;
  readonly #batchSize: number;
  readonly #maxBatchBytes: number;
  readonly #lingerMs: number;
  readonly #maxBuffered: number;
  readonly #retries: number | undefined;
  readonly #backoffMs: number | undefined;
  readonly #maxRecordBytes: number;
  readonly #metadataMaxAgeMs: number;
  readonly #maxBufferBytes: number;
  readonly #maxBlockMs: number;
  readonly #deliveryTimeoutMs: number;
  readonly #acks: "0" | "wal" | "all";
  readonly #idempotent: boolean;
  readonly #producerName: string | undefined;
  /** Idempotent identity from the broker, once initialised. */
  #identity: { producerId: string; epoch: number } | undefined;
  #identityLoad: Promise<{ producerId: string; epoch: number }> | undefined;
  /** The epoch of the identity this producer last had (kept across a re-init). */
  #lastEpoch: number | undefined;
  /** Idempotent: the seq the next batch of a partition is numbered from. */
  readonly #nextSeq = new Map<number, number>();
  readonly #maxInFlight: number;
  /** Idempotent: per partition, its numbered batches not yet answered for good, in seq order. */
  readonly #lanes = new Map<number, Batch[]>();
  /** Idempotent: bumped by each re-init; a batch's seqs belong to one generation. */
  #gen = 0;
  /** Idempotent: requests out now (a re-init waits for them). */
  #sending = 0;
  /** Idempotent: held batches settling with their own seqs (a re-init waits for them too). */
  #holding = 0;
  #reinit: Promise<void> | undefined;
  /**
   * Idempotent: per partition, the identity generation under which a batch
   * left its lane in doubt. An abandoned attempt of it may still reach the
   * owner and fill the gap before a later batch, so no later refusal under
   * that generation proves the later batch not stored.
   */
  readonly #doubtLeft = new Map<number, number>();
  #changeWaiters: Array<() => void> = [];
  #bufferedBytes = 0;
  #fenced: NaradError | undefined;
  readonly #m = {
    sent: 0,
    retried: 0,
    failed: 0,
    batches: 0,
    latencyTotal: 0,
    latencyLast: 0,
    reinits: 0,
    maxInFlight: 0,
    held: 0,
  };

  readonly #open = new Map<number, Batch>();
  readonly #ready = new Map<number, Batch[]>();
  readonly #inFlight = new Set<number>();
  #buffered = 0;
  readonly #spaceWaiters: Array<() => void> = [];
  readonly #idleWaiters: Array<() => void> = [];
  #errors: unknown[] = [];
  #closed = false;

  readonly #rotator = createRotator(Math.floor(Math.random() * 1024));
  #sticky: number | undefined;
  #partitions: number | undefined;
  #metaAt = 0;
  #metaLoad: Promise<number> | undefined;

  constructor(client: ClientHandle, topic: string, opts: ProducerOptions) {
    this.#client = client;
    this.topic = topic;
    this.#batchSize = Math.max(1, opts.batchSize ?? 1000);
    this.#maxBatchBytes = Math.max(1, opts.maxBatchBytes ?? 4 * 1024 * 1024);
    this.#lingerMs = Math.max(0, opts.lingerMs ?? 5);
    this.#maxBuffered = Math.max(1, opts.maxBufferedRecords ?? 20_000);
    this.#retries = opts.retries;
    this.#backoffMs = opts.backoffMs;
    this.#maxRecordBytes = opts.maxRecordBytes ?? 1024 * 1024;
    this.#metadataMaxAgeMs = opts.metadataMaxAgeMs ?? 30_000;
    this.#maxBufferBytes = Math.max(1, opts.maxBufferBytes ?? 32 * 1024 * 1024);
    this.#maxBlockMs = Math.max(0, opts.maxBlockMs ?? 60_000);
    this.#deliveryTimeoutMs = Math.max(1, opts.deliveryTimeoutMs ?? 120_000);
    this.#idempotent = opts.idempotent === true;
    if (this.#idempotent && opts.acks !== undefined && opts.acks !== "all")
      throw new BadRequestError('an idempotent producer needs acks "all"', 0);
    this.#acks = this.#idempotent ? "all" : (opts.acks ?? "wal");
    this.#maxInFlight = this.#idempotent ? Math.min(5, Math.max(1, opts.maxInFlight ?? 5)) : 1;
    if (opts.producerName !== undefined) {
      if (!this.#idempotent) throw new BadRequestError("producerName needs idempotent: true", 0);
      if (!/^[A-Za-z0-9._-]{1,128}$/.test(opts.producerName))
        throw new BadRequestError("producerName must be 1-128 chars of [A-Za-z0-9._-]", 0);
    }
    this.#producerName = opts.producerName;
  }

  /**
   * Gets (once) this producer's identity from the broker. A named producer
   * re-initialising itself names the epoch it had, so the broker bumps it
   * only if no newer instance took the name (else producer_fenced).
   */
  async #identityOf(): Promise<{ producerId: string; epoch: number }> {
    if (this.#identity !== undefined) return this.#identity;
    const body: { name?: string; epoch?: number } =
      this.#producerName === undefined ? {} : { name: this.#producerName };
    if (this.#producerName !== undefined && this.#lastEpoch !== undefined) body.epoch = this.#lastEpoch;
    this.#identityLoad ??= this.#client.transport
      .request({
        method: "POST",
        path: "/v1/producers",
        contentType: "application/json",
        body: Buffer.from(JSON.stringify(body)),
        // A named init that bumps an epoch answers only once every broker
        // fenced the old one: up to the brokers' fence lease (default 10 s,
        // at most 60 s) when one does not answer. Timing out first would
        // make the retry bump again and wait again.
        timeoutMs: Math.max(this.#client.transport.timeoutMs, producerInitTimeoutMs),
        ...(this.#retries === undefined ? {} : { retries: this.#retries }),
      })
      .then((reply) => {
        const r = JSON.parse(reply.body.toString("utf8")) as { producer_id: string; epoch: number };
        this.#identity = { producerId: r.producer_id, epoch: r.epoch };
        this.#lastEpoch = r.epoch;
        return this.#identity;
      })
      .finally(() => {
        this.#identityLoad = undefined;
      });
    return this.#identityLoad;
  }

  /** Initialises the idempotent identity now (otherwise done before the first batch). */
  async init(): Promise<{ producerId: string; epoch: number } | undefined> {
    return this.#idempotent ? this.#identityOf() : undefined;
  }

  /** Counters (records sent, retried, failed, batch size, buffer use, request latency). */
  get metrics(): ProducerMetrics {
    const m = this.#m;
    return {
      recordsSent: m.sent,
      recordsRetried: m.retried,
      recordsFailed: m.failed,
      batchesSent: m.batches,
      batchSizeAvg: m.batches === 0 ? 0 : m.sent / m.batches,
      bufferedBytes: this.#bufferedBytes,
      bufferedRecords: this.#buffered,
      requestLatencyAvgMs: m.batches === 0 ? 0 : m.latencyTotal / m.batches,
      requestLatencyLastMs: m.latencyLast,
      reinits: m.reinits,
      maxInFlightSeen: m.maxInFlight,
      batchesHeld: m.held,
    };
  }

  /** The idempotent identity (undefined for a plain producer, or before init). */
  get identity(): { producerId: string; epoch: number } | undefined {
    return this.#identity;
  }

  /** Records buffered or in flight. */
  get buffered(): number {
    return this.#buffered;
  }

  async #partitionCount(): Promise<number> {
    if (this.#partitions !== undefined && Date.now() - this.#metaAt < this.#metadataMaxAgeMs) {
      return this.#partitions;
    }
    this.#metaLoad ??= this.#client.topics
      .get(this.topic, { partition: 0 })
      .then(
        (t) => {
          this.#partitions = t.partitions;
          this.#metaAt = Date.now();
          return t.partitions;
        },
        (err: unknown) => {
          // A refresh that fails keeps the count we had.
          if (this.#partitions !== undefined) return this.#partitions;
          throw err;
        },
      )
      .finally(() => {
        this.#metaLoad = undefined;
      });
    return this.#metaLoad;
  }

  /**
   * Buffers one record, waiting for space when the buffer is full. Resolves
   * once buffered; `delivered` settles when its batch was answered. Errors of
   * records nobody awaits are also reported by flush() and close().
   */
  async send(payload: unknown, opts: SendOptions = {}): Promise<Sent> {
    if (this.#fenced !== undefined) throw this.#fenced;
    if (this.#closed) throw new ClosedError("producer");
    const bytes = payloadBytes(payload);
    if (bytes.length > this.#maxRecordBytes) {
      throw new PayloadTooLargeError(
        `record of ${bytes.length} bytes exceeds maxRecordBytes (${this.#maxRecordBytes})`,
        0,
      );
    }
    const key =
      opts.key === undefined
        ? emptyKey
        : typeof opts.key === "string"
          ? Buffer.from(opts.key, "utf8")
          : Buffer.from(opts.key);
    if (key.length > 0xffff) throw new BadRequestError(`key of ${key.length} bytes exceeds 65535`, 0);
    const partitions = await this.#partitionCount();
    if (opts.partition !== undefined) {
      if (!Number.isInteger(opts.partition) || opts.partition < 0 || opts.partition >= partitions) {
        throw new BadRequestError(
          `partition ${opts.partition} is out of range [0, ${partitions}) for topic "${this.topic}"`,
          0,
        );
      }
    }
    const size = bytes.length + key.length;
    const blockUntil = Date.now() + this.#maxBlockMs;
    while (
      this.#buffered >= this.#maxBuffered ||
      (this.#bufferedBytes > 0 && this.#bufferedBytes + size > this.#maxBufferBytes)
    ) {
      const left = blockUntil - Date.now();
      if (left <= 0) {
        throw new BufferFullError(
          `producer buffer full (${this.#buffered} records, ${this.#bufferedBytes} of ${this.#maxBufferBytes} bytes) for ${this.#maxBlockMs} ms`,
        );
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          const i = this.#spaceWaiters.indexOf(wake);
          if (i >= 0) this.#spaceWaiters.splice(i, 1);
          resolve();
        }, left);
        const wake = (): void => {
          clearTimeout(t);
          resolve();
        };
        this.#spaceWaiters.push(wake);
      });
      if (this.#fenced !== undefined) throw this.#fenced;
      if (this.#closed) throw new ClosedError("producer");
    }
    // No await between the check above and this reservation.
    this.#buffered++;
    this.#bufferedBytes += size;
    let partition: number;
    if (opts.partition !== undefined) partition = opts.partition;
    else if (key.length > 0) partition = partitionForKey(key, partitions);
    else {
      if (this.#sticky === undefined || this.#sticky >= partitions)
        this.#sticky = this.#rotator.next(partitions);
      partition = this.#sticky;
    }
    let pending!: Pending;
    const delivered = new Promise<Delivery>((resolve, reject) => {
      pending = { key, payload: bytes, deadlineMs: Date.now() + this.#deliveryTimeoutMs, resolve, reject };
    });
    delivered.catch(noop); // reported by flush()/close() when nobody awaits it
    this.#append(partition, pending);
    return { partition, delivered };
  }

  #append(partition: number, rec: Pending): void {
    let batch = this.#open.get(partition);
    if (batch === undefined) {
      batch = { partition, records: [], bytes: 0, timer: undefined, due: false };
      this.#open.set(partition, batch);
      const b = batch;
      b.timer = setTimeout(() => {
        b.timer = undefined;
        b.due = true;
        if (!this.#full(partition)) this.#seal(partition);
      }, this.#lingerMs);
    }
    batch.records.push(rec);
    batch.bytes += rec.payload.length + rec.key.length + 10;
    if (batch.records.length >= this.#batchSize || batch.bytes >= this.#maxBatchBytes) this.#seal(partition);
  }

  #seal(partition: number): void {
    const batch = this.#open.get(partition);
    if (batch === undefined) return;
    this.#open.delete(partition);
    if (batch.timer !== undefined) clearTimeout(batch.timer);
    let queue = this.#ready.get(partition);
    if (queue === undefined) {
      queue = [];
      this.#ready.set(partition, queue);
    }
    queue.push(batch);
    this.#pump(partition);
  }

  /** The partition has as many batches in flight as it may. */
  #full(partition: number): boolean {
    if (this.#idempotent) {
      const lane = this.#lanes.get(partition);
      // Nothing is numbered behind a held batch: the owner's 5-batch memory
      // then still holds it when its exact retry arrives.
      return (lane?.length ?? 0) >= this.#maxInFlight || (lane?.some((b) => b.held === true) ?? false);
    }
    return this.#inFlight.has(partition);
  }

  #pump(partition: number): void {
    if (this.#idempotent) {
      this.#pumpIdempotent(partition);
      return;
    }
    if (this.#inFlight.has(partition)) return;
    const queue = this.#ready.get(partition);
    const batch = queue?.shift();
    if (batch === undefined) {
      // The open batch waited for the one in flight: send it now if it is due.
      if (this.#open.get(partition)?.due) this.#seal(partition);
      return;
    }
    if (queue?.length === 0) this.#ready.delete(partition);
    this.#inFlight.add(partition);
    void this.#sendBatch(batch).finally(() => {
      this.#inFlight.delete(partition);
      this.#release(batch.records);
      this.#pump(partition);
    });
  }

  #fail(err: unknown, records: Pending[]): void {
    this.#errors.push(err);
    this.#m.failed += records.length;
    for (const r of records) r.reject(err);
  }

  #timeoutError(): DeliveryTimeoutError {
    return new DeliveryTimeoutError(`record not delivered within ${this.#deliveryTimeoutMs} ms`);
  }

  /** A plain producer's batch: one request (the transport retries it), one batch in flight per partition. */
  async #sendBatch(batch: Batch): Promise<void> {
    const started = Date.now();
    // deliveryTimeoutMs: records whose time is up are not sent.
    const live = batch.records.filter((r) => r.deadlineMs > started);
    if (live.length < batch.records.length)
      this.#fail(
        flagged(this.#timeoutError(), false),
        batch.records.filter((r) => r.deadlineMs <= started),
      );
    if (live.length === 0) return;
    if (this.#fenced !== undefined) return this.#fail(flagged(this.#fenced, false), live);
    const deadline = Math.min(...live.map((r) => r.deadlineMs));
    let reply: Reply;
    let unsure = false;
    const note = (err: unknown) => {
      if (attemptOutcome(err) === "unknown") unsure = true;
    };
    try {
      reply = await this.#post(batch.partition, live, undefined, deadline, note);
    } catch (err) {
      note(err);
      const e = (err as Error)?.name === "TimeoutError" ? this.#timeoutError() : err;
      return this.#fail(flagged(e, unsure), live);
    }
    this.#succeeded(batch.partition, live, reply, started);
  }

  async #post(
    partition: number,
    live: Pending[],
    headers: Record<string, string> | undefined,
    deadline: number,
    note: (err: unknown) => void,
  ): Promise<Reply> {
    return this.#client.transport.request({
      method: "POST",
      path: `/v1/topics/${encodeURIComponent(this.topic)}/produce-batch`,
      query: { acks: this.#acks === "wal" ? undefined : this.#acks },
      contentType: "application/vnd.narad.batch",
      body: encodeBinaryBatch(live.map((r) => ({ partition, key: r.key, payload: r.payload }))),
      ...(headers === undefined ? {} : { headers }),
      ctx: { topic: this.topic },
      signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      onRetry: (err) => {
        note(err);
        this.#m.retried += live.length;
      },
      ...(this.#retries === undefined ? {} : { retries: this.#retries }),
      ...(this.#backoffMs === undefined ? {} : { backoffMs: this.#backoffMs }),
    });
  }

  #succeeded(partition: number, live: Pending[], reply: Reply, started: number): void {
    this.#m.batches++;
    this.#m.sent += live.length;
    this.#m.latencyLast = Date.now() - started;
    this.#m.latencyTotal += this.#m.latencyLast;
    // Keyless records stick to a partition until a batch of it succeeded.
    if (this.#sticky === partition) this.#sticky = undefined;
    let offsets: Array<number | null> | undefined;
    if (this.#acks === "all") {
      const parsed = JSON.parse(reply.body.toString("utf8")) as {
        results?: Array<{ offset: number | null }>;
      };
      offsets = parsed.results?.map((r) => r.offset);
    }
    for (let i = 0; i < live.length; i++) {
      const d: Delivery = { topic: this.topic, partition };
      if (offsets !== undefined) d.offset = offsets[i] ?? null;
      live[i]!.resolve(d);
    }
  }

  // ------------------------------------------------------------ idempotent

  /** Wakes everything waiting for a lane, a request or a re-init to change. */
  #changed(): void {
    for (const w of this.#changeWaiters.splice(0)) w();
  }

  async #until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((resolve) => this.#changeWaiters.push(resolve));
  }

  #pumpIdempotent(partition: number): void {
    const queue = this.#ready.get(partition);
    while (this.#reinit === undefined && !this.#full(partition)) {
      const batch = queue?.shift();
      if (batch === undefined) break;
      // Records whose time is up are not sent; the rest are the batch for good.
      const now = Date.now();
      const expired = batch.records.filter((r) => r.deadlineMs <= now);
      if (expired.length > 0) this.#fail(flagged(this.#timeoutError(), false), expired); // never sent
      const live = batch.records.filter((r) => r.deadlineMs > now);
      if (live.length === 0) {
        this.#release(batch.records);
        continue;
      }
      batch.live = live;
      batch.firstSeq = this.#nextSeq.get(partition) ?? 0;
      batch.gen = this.#gen;
      this.#nextSeq.set(partition, batch.firstSeq + live.length);
      let lane = this.#lanes.get(partition);
      if (lane === undefined) {
        lane = [];
        this.#lanes.set(partition, lane);
      }
      lane.push(batch);
      this.#m.maxInFlight = Math.max(this.#m.maxInFlight, lane.length);
      void this.#runIdempotent(batch).finally(() => {
        const l = this.#lanes.get(partition);
        const i = l?.indexOf(batch) ?? -1;
        if (i >= 0) l!.splice(i, 1);
        if (l?.length === 0) this.#lanes.delete(partition);
        this.#release(batch.records);
        this.#changed();
        this.#pump(partition);
      });
    }
    if (queue?.length === 0) this.#ready.delete(partition);
    // The open batch waited for room in flight: send it now if it is due.
    if (this.#reinit === undefined && !this.#full(partition) && this.#open.get(partition)?.due)
      this.#seal(partition);
  }

  /** An earlier batch of the same partition is still unanswered. */
  #earlierPending(batch: Batch): boolean {
    return (this.#lanes.get(batch.partition)?.indexOf(batch) ?? 0) > 0;
  }

  /** One idempotent batch until it is answered for good (see the header for each refusal). */
  async #runIdempotent(batch: Batch): Promise<void> {
    const live = batch.live ?? [];
    const started = Date.now();
    const deadline = Math.min(...live.map((r) => r.deadlineMs));
    let reinits = 0;
    let holdRetries = 0;
    let lastError: unknown;
    const note = (err: unknown) => {
      if (attemptOutcome(err) === "unknown") batch.unsure = true;
    };
    for (;;) {
      if (batch.outcome !== undefined) return this.#settleTakenOut(batch, lastError);
      if (this.#fenced !== undefined) return this.#settleFenced(batch, this.#fenced);
      // A held batch keeps the identity its seqs belong to: the re-init waits for it instead.
      if (this.#reinit !== undefined && batch.held !== true) {
        await this.#reinit;
        continue;
      }
      if (batch.held === true) {
        if (Date.now() >= (batch.holdUntil ?? 0)) return this.#endHold(batch, lastError);
      } else if (Date.now() >= deadline) {
        lastError = this.#timeoutError();
        if (this.#hold(batch)) continue;
        return this.#failForGood(batch, lastError);
      }
      const gen = this.#gen;
      let id: { producerId: string; epoch: number };
      try {
        id = await this.#identityOf();
      } catch (err) {
        // A re-init refused because a newer instance holds the name: fenced.
        if (err instanceof FencedProducerError) {
          this.#fence(err);
          return this.#settleFenced(batch, err);
        }
        return this.#failForGood(batch, err);
      }
      // A re-init began while the identity loaded: this batch's seqs are being re-numbered.
      if (batch.held !== true && (this.#reinit !== undefined || gen !== this.#gen)) continue;
      const headers = {
        "narad-producer-id": id.producerId,
        "narad-producer-epoch": String(id.epoch),
        "narad-producer-seq": String(batch.firstSeq ?? 0),
      };
      // An earlier batch still unanswered when this one leaves may reach the
      // owner after it; its answer may also come back first. Either way an
      // out-of-order refusal of this attempt is then no gap.
      const overtakable = this.#earlierPending(batch);
      let reply: Reply | undefined;
      let error: unknown;
      this.#sending++;
      try {
        reply = await this.#post(batch.partition, live, headers, batch.holdUntil ?? deadline, note);
      } catch (err) {
        note(err);
        error = (err as Error)?.name === "TimeoutError" ? this.#timeoutError() : err;
      } finally {
        this.#sending--;
        this.#changed();
      }
      if (reply !== undefined) {
        // The owner takes only the next seq: every earlier batch of the lane was stored.
        for (const b of this.#lanes.get(batch.partition) ?? []) {
          if (b === batch) break;
          b.stored = true;
        }
        this.#unhold(batch);
        return this.#succeeded(batch.partition, live, reply, started);
      }
      if (error instanceof FencedProducerError) {
        // Another instance took over: surface it, never re-initialise past it.
        this.#fence(error);
        return this.#settleFenced(batch, error);
      }
      if (error instanceof OutOfOrderSequenceError && (overtakable || this.#earlierPending(batch))) {
        // Overtaken: the earlier batches decide (accepted, or refused and re-initialised).
        this.#m.retried += live.length;
        // A held batch behind an earlier one lets a re-init proceed meanwhile:
        // it was refused behind a batch that is not stored yet, so it is not
        // stored either, and re-numbering it is safe.
        const wasHeld = batch.held === true;
        this.#unhold(batch);
        await this.#until(
          () => !this.#earlierPending(batch) || this.#gen !== gen || this.#fenced !== undefined,
        );
        if (wasHeld && this.#gen === gen) {
          batch.held = true;
          this.#holding++;
        }
        continue;
      }
      if (
        batch.held === true &&
        (error instanceof OutOfOrderSequenceError || error instanceof UnknownProducerIdError)
      )
        return this.#refusedWhileHeld(batch, error, gen);
      if (error instanceof OutOfOrderSequenceError || error instanceof UnknownProducerIdError) {
        // A later batch was accepted: this one was stored (its result forgotten), never re-number it.
        if (batch.stored === true) return this.#storedOffsetsUnknown(batch);
        lastError = error;
        if (reinits >= 2) return this.#failForGood(batch, error);
        reinits++;
        this.#m.retried += live.length;
        batch.provenRefused = error instanceof OutOfOrderSequenceError && this.#refusalProves(batch);
        await this.#reinitialise(gen);
        continue;
      }
      lastError = error;
      if (this.#hold(batch)) {
        // Held: its exact retries (or a later batch's acceptance) settle it.
        this.#m.retried += live.length;
        const left = (batch.holdUntil ?? 0) - Date.now();
        const pause = this.#client.transport.backoff(holdRetries++, this.#backoffMs);
        await sleep(Math.max(0, Math.min(left, pause)));
        continue;
      }
      return this.#failForGood(batch, error);
    }
  }

  /**
   * Holds a batch that failed in doubt while later batches of its partition
   * are numbered after it (true when held). A plain failure would invite a
   * re-send with new seqs, stored twice if it had been stored; instead it
   * keeps its seqs and is retried exactly for one more deliveryTimeoutMs.
   */
  #hold(batch: Batch): boolean {
    if (batch.held === true) return true;
    if (batch.unsure !== true || batch.holdUntil !== undefined || batch.gen !== this.#gen) return false;
    if (this.#nextSeq.get(batch.partition) === (batch.firstSeq ?? 0) + (batch.live?.length ?? 0))
      return false; // its partition's last numbered batch: #failForGood rewinds instead
    batch.holdUntil = Date.now() + this.#deliveryTimeoutMs;
    batch.held = true;
    this.#holding++;
    this.#m.held++;
    return true;
  }

  #unhold(batch: Batch): void {
    if (batch.held !== true) return;
    batch.held = false;
    this.#holding--;
    this.#changed();
  }

  /** Stored (a later batch was accepted) but its offsets could not be learned. */
  #storedOffsetsUnknown(batch: Batch): void {
    const live = batch.live ?? [];
    this.#m.sent += live.length;
    for (const r of live) r.resolve({ topic: this.topic, partition: batch.partition, offset: null });
  }

  /** The settle window of a held batch ran out. */
  #endHold(batch: Batch, lastError: unknown): void {
    this.#unhold(batch);
    if (batch.stored === true) {
      this.#storedOffsetsUnknown(batch);
      return;
    }
    const first = batch.firstSeq ?? 0;
    const n = batch.live?.length ?? 0;
    if (batch.gen !== undefined) this.#doubtLeft.set(batch.partition, batch.gen);
    this.#fail(
      new DeliveryInDoubtError(
        `partition ${batch.partition}: seqs ${first}-${first + n - 1} unsettled ${this.#deliveryTimeoutMs} ms after their delivery failed; later batches were numbered after them`,
        lastError,
      ),
      batch.live ?? [],
    );
  }

  /**
   * An exact retry of a held batch refused with nothing earlier pending: its
   * seqs are not the owner's next and not remembered, so (unless a later
   * batch was accepted) it was not stored. It leaves its lane before the
   * re-init, which re-numbers the batches after it, and is rejected after it
   * (for a named producer the new epoch fences any attempt still under way).
   */
  async #refusedWhileHeld(batch: Batch, error: unknown, gen: number): Promise<void> {
    this.#unhold(batch);
    if (batch.stored === true) return this.#storedOffsetsUnknown(batch);
    const lane = this.#lanes.get(batch.partition);
    const i = lane?.indexOf(batch) ?? -1;
    if (i >= 0) lane!.splice(i, 1);
    if (lane?.length === 0) this.#lanes.delete(batch.partition);
    // unknown_producer_id says nothing about an earlier attempt under the lost id.
    const proven = error instanceof OutOfOrderSequenceError && this.#refusalProves(batch);
    if (!proven) this.#doubtLeft.set(batch.partition, gen);
    await this.#reinitialise(gen);
    this.#fail(flagged(error, !proven), batch.live ?? []);
  }

  /**
   * Whether an out_of_order refusal of `batch` (nothing earlier pending)
   * proves it was not stored and never will be under its identity. Its
   * abandoned attempts (given up by the client, still in a proxy, a socket or
   * a WAL) are accepted later only if the owner reaches the seq before its
   * first: that needs an earlier batch of the partition that may still land
   * (one that left in doubt under this generation). And a later batch that
   * may have been stored could mean the owner passed it and forgot it.
   */
  #refusalProves(batch: Batch): boolean {
    if (batch.stored === true || this.#doubtLeft.get(batch.partition) === batch.gen) return false;
    const lane = this.#lanes.get(batch.partition) ?? [];
    const i = lane.indexOf(batch);
    return lane.slice(i + 1).every((b) => b.unsure !== true);
  }

  /** A batch a re-init took out of its lane instead of re-numbering it. */
  #settleTakenOut(batch: Batch, lastError: unknown): void {
    this.#unhold(batch);
    if (batch.outcome === "stored") {
      this.#storedOffsetsUnknown(batch);
      return;
    }
    const first = batch.firstSeq ?? 0;
    const n = batch.live?.length ?? 0;
    this.#fail(
      new DeliveryInDoubtError(
        `partition ${batch.partition}: seqs ${first}-${first + n - 1} may be stored by an attempt the producer gave up on; the identity was re-initialised, so they are not re-sent under new seqs`,
        lastError,
      ),
      batch.live ?? [],
    );
  }

  /** Fenced: a batch known stored resolves; else it fails, flagged by what its attempts may have done. */
  #settleFenced(batch: Batch, err: FencedProducerError): void {
    this.#unhold(batch);
    if (batch.stored === true) {
      this.#storedOffsetsUnknown(batch);
      return;
    }
    this.#fail(flagged(err, batch.unsure === true), batch.live ?? []);
  }

  /** Closes the producer for good: every pending and later send fails with `err`. */
  #fence(err: FencedProducerError): void {
    this.#fenced = err;
    this.#closed = true;
    for (const w of this.#spaceWaiters.splice(0)) w();
    this.#changed();
  }

  /**
   * Fails a batch (flagged notStored or inDoubt by its attempts). When it is
   * its partition's last numbered batch the next seq goes back to its first,
   * so a re-send of the same records gets the same seqs (and is recognised
   * if it was stored).
   */
  #failForGood(batch: Batch, err: unknown): void {
    const live = batch.live ?? [];
    const lane = this.#lanes.get(batch.partition) ?? [];
    const first = batch.firstSeq ?? 0;
    if (
      lane[lane.length - 1] === batch &&
      batch.gen === this.#gen &&
      this.#nextSeq.get(batch.partition) === first + live.length
    )
      this.#nextSeq.set(batch.partition, first);
    if (batch.stored === true) {
      this.#storedOffsetsUnknown(batch);
      return;
    }
    if (batch.unsure === true && batch.gen !== undefined) this.#doubtLeft.set(batch.partition, batch.gen);
    this.#fail(flagged(err, batch.unsure === true), live);
  }

  /**
   * A new identity for generation `gen` + 1 (once, however many batches ask):
   * no new request starts, the ones out finish, then every unanswered batch
   * is re-numbered from seq 0 in its partition's order and the next batch
   * fetches the identity (a named producer's next epoch, or a new id).
   */
  #reinitialise(gen: number): Promise<void> {
    if (gen !== this.#gen) return Promise.resolve(); // another batch already did
    this.#reinit ??= (async () => {
      await this.#until(() => this.#sending === 0 && this.#holding === 0);
      this.#identity = undefined;
      this.#gen++;
      this.#m.reinits++;
      this.#nextSeq.clear();
      this.#doubtLeft.clear();
      for (const [partition, lane] of this.#lanes) {
        let seq = 0;
        // Re-numbered (sent again under the new identity) only when no attempt
        // under the old one can still store it: a batch known stored, or one
        // with an attempt that got no answer (unless a refusal proved it not
        // stored), is taken out and settled by its own run loop instead. An
        // abandoned attempt may reach the owner after the gap before it is
        // filled, and a fence (a named producer's next epoch) comes only with
        // the new identity, after requests already out could land.
        const kept: Batch[] = [];
        for (const b of lane) {
          if (b.stored === true) b.outcome = "stored";
          else if (b.unsure === true && b.provenRefused !== true) b.outcome = "doubt";
          else kept.push(b);
        }
        lane.splice(0, lane.length, ...kept);
        for (const b of kept) {
          b.firstSeq = seq;
          b.gen = this.#gen;
          b.unsure = false;
          b.stored = false;
          b.provenRefused = false;
          seq += b.live?.length ?? 0;
        }
        if (kept.length > 0) this.#nextSeq.set(partition, seq);
        else this.#lanes.delete(partition);
      }
    })().finally(() => {
      this.#reinit = undefined;
      this.#changed();
      for (const p of [...this.#ready.keys(), ...this.#open.keys()]) this.#pump(p);
    });
    return this.#reinit;
  }

  #release(records: Pending[]): void {
    const n = records.length;
    this.#buffered -= n;
    for (const r of records) this.#bufferedBytes -= r.payload.length + r.key.length;
    for (const w of this.#spaceWaiters.splice(0)) w();
    if (this.#buffered === 0) for (const w of this.#idleWaiters.splice(0)) w();
  }

  /**
   * Sends every buffered record now and waits until all are answered.
   * Rejects with the first error of any record that failed since the last
   * flush (the error's `failedBatches` counts them all).
   */
  async flush(): Promise<void> {
    for (const p of [...this.#open.keys()]) {
      const b = this.#open.get(p);
      if (b === undefined) continue;
      b.due = true;
      if (!this.#full(p)) this.#seal(p);
    }
    if (this.#buffered > 0) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    const errors = this.#errors;
    this.#errors = [];
    if (errors.length > 0) {
      const first = errors[0] as NaradError & { failedBatches?: number };
      first.failedBatches = errors.length;
      throw first;
    }
  }

  /** Flushes, then refuses further sends. */
  async close(): Promise<void> {
    if (this.#closed) return this.flush();
    this.#closed = true;
    // Senders waiting for space get ClosedError; what is buffered is still sent.
    for (const w of this.#spaceWaiters.splice(0)) w();
    await this.flush();
  }
}
