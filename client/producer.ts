// The batching producer. Records go into one accumulator per partition; a
// batch is sent (binary produce-batch) when it holds batchSize records or
// maxBatchBytes, or lingerMs after its first record. One batch per partition
// is in flight at a time, so a producer's records keep their order within a
// partition, retries included; while one is in flight the next keeps filling.
//
// Partitioning matches the broker: an explicit partition wins, a key hashes
// with the broker's FNV-1a, keyless records stick to one partition until its
// batch is sealed, then move on to the next partition.
//
// The buffer is bounded: send() waits for space while maxBufferedRecords are
// buffered or in flight (backpressure, never unbounded).
//
// Acknowledgements (`acks`): "wal" (default: the broker answers after its WAL
// fsync, no offsets), "all" (after the partition owner committed the batch:
// each record's delivery carries its offset), "0" (answered on receipt, no
// promise at all).
//
// Idempotent mode ({ idempotent: true }, implies acks "all"): the identity
// (producer id, epoch) comes from the broker (POST /v1/producers, optionally
// with `producerName`: re-initialising a name fences every earlier instance).
// Sequences are per partition; a batch takes the partition's next sequence
// when it is first sent and the sequence advances only after the batch
// succeeded, so every attempt (transport retries, and an application's
// re-send of a failed batch) carries the same (id, epoch, seq) and the owner
// answers a retry with its original offsets instead of storing it twice.
// Errors by the broker's `code`: producer_fenced closes the producer
// (FencedProducerError, later sends fail), out_of_order_sequence fails the
// batch (OutOfOrderSequenceError), 503/429/network errors are retried.
//
// Buffer: maxBufferBytes (payload + key) buffered or in flight; send() blocks
// up to maxBlockMs for space, then throws BufferFullError. A record that is
// not delivered within deliveryTimeoutMs of send() fails with
// DeliveryTimeoutError (checked before each attempt of its batch).

import type { NaradClient } from "./client.ts";
import {
  BadRequestError,
  BufferFullError,
  ClosedError,
  DeliveryTimeoutError,
  FencedProducerError,
  type NaradError,
  PayloadTooLargeError,
} from "./errors.ts";
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
}

const noop = () => {};
const emptyKey = Buffer.alloc(0);

export class Producer {
  readonly topic: string;
  readonly #client: NaradClient;
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
  /** Next producer seq per partition: advanced only when a batch succeeded. */
  readonly #nextSeq = new Map<number, number>();
  #bufferedBytes = 0;
  #fenced: NaradError | undefined;
  readonly #m = { sent: 0, retried: 0, failed: 0, batches: 0, latencyTotal: 0, latencyLast: 0 };

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

  constructor(client: NaradClient, topic: string, opts: ProducerOptions) {
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
    if (opts.producerName !== undefined) {
      if (!this.#idempotent) throw new BadRequestError("producerName needs idempotent: true", 0);
      if (!/^[A-Za-z0-9._-]{1,128}$/.test(opts.producerName))
        throw new BadRequestError("producerName must be 1-128 chars of [A-Za-z0-9._-]", 0);
    }
    this.#producerName = opts.producerName;
  }

  /** Gets (once) this producer's identity from the broker. */
  async #identityOf(): Promise<{ producerId: string; epoch: number }> {
    if (this.#identity !== undefined) return this.#identity;
    this.#identityLoad ??= this.#client.transport
      .request({
        method: "POST",
        path: "/v1/producers",
        contentType: "application/json",
        body: Buffer.from(
          JSON.stringify(this.#producerName === undefined ? {} : { name: this.#producerName }),
        ),
        ...(this.#retries === undefined ? {} : { retries: this.#retries }),
      })
      .then((reply) => {
        const r = JSON.parse(reply.body.toString("utf8")) as { producer_id: string; epoch: number };
        this.#identity = { producerId: r.producer_id, epoch: r.epoch };
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
        if (!this.#inFlight.has(partition)) this.#seal(partition);
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

  #pump(partition: number): void {
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

  async #sendBatch(batch: Batch): Promise<void> {
    const started = Date.now();
    const fail = (err: unknown, records: Pending[]): void => {
      this.#errors.push(err);
      this.#m.failed += records.length;
      for (const r of records) r.reject(err);
    };
    // deliveryTimeoutMs: records whose time is up are not sent.
    const live = batch.records.filter((r) => r.deadlineMs > started);
    if (live.length < batch.records.length) {
      fail(
        new DeliveryTimeoutError(`record not delivered within ${this.#deliveryTimeoutMs} ms`),
        batch.records.filter((r) => r.deadlineMs <= started),
      );
    }
    if (live.length === 0) return;
    if (this.#fenced !== undefined) return fail(this.#fenced, live);
    let headers: Record<string, string> | undefined;
    if (this.#idempotent) {
      let id: { producerId: string; epoch: number };
      try {
        id = await this.#identityOf();
      } catch (err) {
        return fail(err, live);
      }
      // The partition's next sequence; advanced only on success, so a re-send
      // of a failed batch (same records, same order) is recognised by the owner.
      batch.firstSeq = this.#nextSeq.get(batch.partition) ?? 0;
      headers = {
        "narad-producer-id": id.producerId,
        "narad-producer-epoch": String(id.epoch),
        "narad-producer-seq": String(batch.firstSeq),
      };
    }
    const body = encodeBinaryBatch(
      live.map((r) => ({ partition: batch.partition, key: r.key, payload: r.payload })),
    );
    const deadline = Math.min(...live.map((r) => r.deadlineMs));
    let reply: Awaited<ReturnType<NaradClient["transport"]["request"]>>;
    try {
      reply = await this.#client.transport.request({
        method: "POST",
        path: `/v1/topics/${encodeURIComponent(this.topic)}/produce-batch`,
        query: { acks: this.#acks === "wal" ? undefined : this.#acks },
        contentType: "application/vnd.narad.batch",
        body,
        ...(headers === undefined ? {} : { headers }),
        ctx: { topic: this.topic },
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
        onRetry: () => {
          this.#m.retried += live.length;
        },
        ...(this.#retries === undefined ? {} : { retries: this.#retries }),
        ...(this.#backoffMs === undefined ? {} : { backoffMs: this.#backoffMs }),
      });
    } catch (err) {
      const e =
        (err as Error)?.name === "TimeoutError"
          ? new DeliveryTimeoutError(`record not delivered within ${this.#deliveryTimeoutMs} ms`)
          : err;
      if (e instanceof FencedProducerError) {
        // A newer instance took over: this producer is done.
        this.#fenced = e;
        this.#closed = true;
        for (const w of this.#spaceWaiters.splice(0)) w();
      }
      return fail(e, live);
    }
    this.#m.batches++;
    this.#m.sent += live.length;
    this.#m.latencyLast = Date.now() - started;
    this.#m.latencyTotal += this.#m.latencyLast;
    if (this.#idempotent) this.#nextSeq.set(batch.partition, (batch.firstSeq ?? 0) + live.length);
    // Keyless records stick to a partition until a batch of it succeeded.
    if (this.#sticky === batch.partition) this.#sticky = undefined;
    let offsets: Array<number | null> | undefined;
    if (this.#acks === "all") {
      const parsed = JSON.parse(reply.body.toString("utf8")) as {
        results?: Array<{ offset: number | null }>;
      };
      offsets = parsed.results?.map((r) => r.offset);
    }
    for (let i = 0; i < live.length; i++) {
      const d: Delivery = { topic: this.topic, partition: batch.partition };
      if (offsets !== undefined) d.offset = offsets[i] ?? null;
      live[i]!.resolve(d);
    }
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
      if (!this.#inFlight.has(p)) this.#seal(p);
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
