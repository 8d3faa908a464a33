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
// Idempotent mode ({ idempotent: true }): the producer has an id (random
// unless given) and an epoch (seconds since the epoch unless given). When a
// batch is sealed it takes the next per-partition sequences; every attempt of
// that batch (transport retries after 503/429/network errors, including a
// response lost after the broker stored the batch) sends the SAME
// narad-producer-id/-epoch/-seq headers, and the partition owner drops the
// copies it already committed. A 409 "producer fenced" (a newer epoch of the
// same id has written) fails the batch with FencedProducerError.

import { randomBytes } from "node:crypto";
import { encodeBinaryBatch } from "../broker/src/core/batch-codec.ts";
import { createRotator, partitionForKey } from "../broker/src/core/partitioner.ts";
import type { NaradClient } from "./client.ts";
import { BadRequestError, ClosedError, type NaradError, PayloadTooLargeError } from "./errors.ts";
import { payloadBytes } from "./types.ts";

export interface ProducerOptions {
  /** Records per batch. Default 1000. */
  batchSize?: number;
  /** Bytes of payload + key per batch. Default 4 MiB. */
  maxBatchBytes?: number;
  /** How long a batch waits for more records. Default 5 ms. */
  lingerMs?: number;
  /** Records buffered or in flight before send() waits. Default 20,000. */
  maxBufferedRecords?: number;
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
  /** 1-64 chars of [A-Za-z0-9._-]. Default: random. Reuse it with a higher epoch to fence an old instance. */
  producerId?: string;
  /** u32. Default: seconds since 1970 (a restarted producer gets a higher epoch). */
  epoch?: number;
}

export interface SendOptions {
  key?: string | Uint8Array;
  partition?: number;
}

export interface Delivery {
  topic: string;
  partition: number;
}

export interface Sent {
  partition: number;
  /** Resolves when the record's batch got 202 (on the broker's disk); rejects with a typed error. */
  delivered: Promise<Delivery>;
}

interface Pending {
  key: Buffer;
  payload: Buffer;
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
  /** Idempotent mode: producer seq of the batch's first record, fixed when sealed. */
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
  /** Idempotent identity, undefined for a plain producer. */
  readonly #identity: { producerId: string; epoch: number } | undefined;
  /** Next producer seq per partition. */
  readonly #nextSeq = new Map<number, number>();

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
    if (opts.idempotent === true) {
      const producerId = opts.producerId ?? `p-${randomBytes(12).toString("hex")}`;
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(producerId)) {
        throw new BadRequestError("producerId must be 1-64 chars of [A-Za-z0-9._-]", 0);
      }
      const epoch = opts.epoch ?? Math.floor(Date.now() / 1000);
      if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0xffff_ffff) {
        throw new BadRequestError("epoch must be an integer in [0, 2^32)", 0);
      }
      this.#identity = { producerId, epoch };
    } else if (opts.producerId !== undefined || opts.epoch !== undefined) {
      throw new BadRequestError("producerId and epoch need idempotent: true", 0);
    }
  }

  /** The idempotent identity (undefined for a plain producer). */
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
    while (this.#buffered >= this.#maxBuffered) {
      await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve));
      if (this.#closed) throw new ClosedError("producer");
    }
    // No await between the check above and this reservation.
    this.#buffered++;
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
      pending = { key, payload: bytes, resolve, reject };
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
    if (this.#sticky === partition) this.#sticky = undefined;
    if (this.#identity !== undefined) {
      const first = this.#nextSeq.get(partition) ?? 0;
      batch.firstSeq = first;
      this.#nextSeq.set(partition, first + batch.records.length);
    }
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
      this.#release(batch.records.length);
      this.#pump(partition);
    });
  }

  async #sendBatch(batch: Batch): Promise<void> {
    const body = encodeBinaryBatch(
      batch.records.map((r) => ({ partition: batch.partition, key: r.key, payload: r.payload })),
    );
    try {
      await this.#client.transport.request({
        method: "POST",
        path: `/v1/topics/${encodeURIComponent(this.topic)}/produce-batch`,
        contentType: "application/vnd.narad.batch",
        body,
        ...(this.#identity === undefined
          ? {}
          : {
              headers: {
                "narad-producer-id": this.#identity.producerId,
                "narad-producer-epoch": String(this.#identity.epoch),
                "narad-producer-seq": String(batch.firstSeq ?? 0),
              },
            }),
        ctx: { topic: this.topic },
        ...(this.#retries === undefined ? {} : { retries: this.#retries }),
        ...(this.#backoffMs === undefined ? {} : { backoffMs: this.#backoffMs }),
      });
    } catch (err) {
      this.#errors.push(err);
      for (const r of batch.records) r.reject(err);
      return;
    }
    const d: Delivery = { topic: this.topic, partition: batch.partition };
    for (const r of batch.records) r.resolve(d);
  }

  #release(n: number): void {
    this.#buffered -= n;
    for (let i = 0; i < n && this.#spaceWaiters.length > 0; i++) this.#spaceWaiters.shift()?.();
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
