// Queue consumer: long-polls `GET …/consume` for a group and hands out
// messages with their receipt handle. Iterate it (`for await`) and ack
// yourself, or give run() a handler: the lease is extended while it runs,
// acked when it returns, nacked (redelivered at once) when it throws.
// Delivery is at-least-once: a handler can see a message again.

import { type NaradError, UnavailableError } from "./errors.ts";
import type { ClientHandle } from "./handle.ts";
import { type Message, messageFromJson } from "./types.ts";

export interface ConsumerOptions {
  /** Consumer group (its own frontier and leases). Default "default". */
  group?: string;
  /** Long-poll wait per request; the broker caps it at 10 s. Default 5 s. */
  waitMs?: number;
  /** Only this partition (default: any). */
  partition?: number;
  /** How often run() extends a lease while its handler runs. Default: a third of the topic's visibility timeout. */
  visibilityExtendMs?: number;
  /** Transient errors (broker down, draining) are retried forever; each is reported here. */
  onError?: (err: unknown) => void;
}

export interface RunOptions {
  /** Handlers running at once. Default 1. */
  concurrency?: number;
}

export interface ReceivedMessage extends Message {
  receiptHandle: string;
  group: string;
  /** Settles the message: it is never delivered to this group again. */
  ack(): Promise<void>;
  /** Gives it back: redelivered at once. */
  nack(): Promise<void>;
  /** Extends the lease to now + the topic's visibility timeout. */
  extend(): Promise<void>;
}

export type Handler = (msg: ReceivedMessage) => unknown;

export class Consumer implements AsyncIterable<ReceivedMessage> {
  readonly topic: string;
  readonly group: string;
  readonly #client: ClientHandle;
  readonly #opts: ConsumerOptions;
  readonly #abort = new AbortController();
  #stopped = false;
  #runs: Promise<void>[] = [];

  constructor(client: ClientHandle, topic: string, opts: ConsumerOptions) {
    this.#client = client;
    this.topic = topic;
    this.group = opts.group ?? "default";
    this.#opts = opts;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  #settle(handle: string, extend: "true" | "0" | undefined): Promise<void> {
    return this.#client.transport
      .request({
        method: "POST",
        path: `/v1/topics/${encodeURIComponent(this.topic)}/ack`,
        query: { receipt_handle: handle, extend },
        ctx: { topic: this.topic, receipt: true },
      })
      .then(() => undefined);
  }

  /**
   * One long-poll: a leased message, or undefined when none came within
   * waitMs (or the consumer was stopped). Transient errors are retried
   * with backoff until stop().
   */
  async poll(): Promise<ReceivedMessage | undefined> {
    if (this.#stopped) return undefined;
    const waitMs = Math.min(this.#opts.waitMs ?? 5000, 10_000);
    let reply: Awaited<ReturnType<ClientHandle["transport"]["request"]>>;
    try {
      reply = await this.#client.transport.request({
        method: "GET",
        path: `/v1/topics/${encodeURIComponent(this.topic)}/consume`,
        query: { wait: `${waitMs}ms`, group: this.group, partition: this.#opts.partition },
        ctx: { topic: this.topic },
        retries: Number.POSITIVE_INFINITY,
        timeoutMs: waitMs + 10_000,
        signal: this.#abort.signal,
        onRetry: (err) => this.#opts.onError?.(err),
      });
    } catch (err) {
      if (this.#stopped) return undefined;
      throw err;
    }
    if (reply.status === 204) return undefined;
    const j = JSON.parse(reply.body.toString("utf8")) as Record<string, unknown>;
    const handle = j.receipt_handle as string;
    return {
      ...messageFromJson(j),
      receiptHandle: handle,
      group: this.group,
      ack: () => this.#settle(handle, undefined),
      nack: () => this.#settle(handle, "0"),
      extend: () => this.#settle(handle, "true"),
    };
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ReceivedMessage, void, undefined> {
    while (!this.#stopped) {
      const msg = await this.poll();
      if (msg !== undefined) yield msg;
    }
  }

  async #extendEveryMs(): Promise<number> {
    if (this.#opts.visibilityExtendMs !== undefined) return Math.max(10, this.#opts.visibilityExtendMs);
    const t = await this.#client.topics.get(this.topic, { partition: 0 });
    return Math.max(10, Math.floor(t.visibilityTimeoutMs / 3));
  }

  /**
   * Runs `handler` for every message until stop(): extends the lease every
   * visibilityExtendMs while it runs, acks when it returns, nacks when it
   * throws. Resolves after stop() once running handlers finished; rejects on
   * a permanent error (unknown topic, bad group name).
   */
  run(handler: Handler, opts: RunOptions = {}): Promise<void> {
    const run = this.#run(handler, Math.max(1, opts.concurrency ?? 1));
    this.#runs.push(run.catch(() => {}));
    return run;
  }

  async #run(handler: Handler, concurrency: number): Promise<void> {
    const extendMs = await this.#extendEveryMs();
    const report = (err: unknown) => this.#opts.onError?.(err);
    const worker = async (): Promise<void> => {
      while (!this.#stopped) {
        const msg = await this.poll();
        if (msg === undefined) continue;
        const timer = setInterval(() => {
          msg.extend().catch(report);
        }, extendMs);
        let failed = false;
        try {
          await handler(msg);
        } catch (err) {
          failed = true;
          report(err);
        } finally {
          clearInterval(timer);
        }
        // Settling uses the client's retries; a stale handle (the lease expired) is reported:
        // the message was or will be redelivered.
        await (failed ? msg.nack() : msg.ack()).catch(report);
      }
    };
    const workers = Array.from({ length: concurrency }, () => worker());
    const results = await Promise.allSettled(workers);
    this.stop();
    const failed = results.find((r) => r.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  /** Stops polling (aborts a long-poll in progress). Handlers already running finish. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort(new UnavailableError("consumer stopped", { status: 0 }) as NaradError);
  }

  /** stop(), then wait for running handlers. */
  async close(): Promise<void> {
    this.stop();
    await Promise.all(this.#runs);
  }
}
