// NaradClient: topics, single produce, replay/read, admin status, and the
// factories of the batching Producer and the queue Consumer.

import { Consumer, type ConsumerOptions } from "./consumer.ts";
import { ClosedError } from "./errors.ts";
import { Producer, type ProducerOptions } from "./producer.ts";
import { type ClientAuth, type ClientTls, Transport } from "./transport.ts";
import {
  type GroupInfo,
  type GroupSeekResult,
  type GroupSeekTarget,
  groupFromJson,
  groupSeekFromJson,
  type Message,
  messageFromJson,
  type NodeStatus,
  payloadBytes,
  type ReadResult,
  settingsJson,
  type Topic,
  type TopicInfo,
  type TopicPatch,
  type TopicSettings,
  topicFromJson,
  topicInfoFromJson,
} from "./types.ts";

export interface NaradClientOptions {
  /** One broker url (http://host:7942). */
  url?: string;
  /** Several brokers: requests fail over between them. */
  urls?: readonly string[];
  /** Per request attempt (a long-poll adds its wait). Default 10 s. */
  timeoutMs?: number;
  /** Retries of a request after 503/429/network errors. Default 3. */
  retries?: number;
  /** First backoff step; doubles per retry (with jitter), capped at maxBackoffMs. Default 100 ms. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Credentials sent with every request (brokers with --auth on). */
  auth?: ClientAuth;
  /** HTTPS: trust these CA certificates (PEM), e.g. a self-signed broker certificate. */
  tls?: ClientTls;
}

export interface ProduceOptions {
  key?: string;
  partition?: number;
}

type Json = Record<string, unknown>;

const enc = encodeURIComponent;

function parseJson(body: Buffer): Json {
  return JSON.parse(body.toString("utf8")) as Json;
}

export class NaradClient {
  readonly transport: Transport;
  readonly #closables = new Set<{ close(): Promise<void> }>();
  #closed = false;

  constructor(opts: NaradClientOptions = {}) {
    const urls = opts.urls ?? (opts.url === undefined ? [] : [opts.url]);
    this.transport = new Transport({
      urls,
      timeoutMs: opts.timeoutMs ?? 10_000,
      retries: opts.retries ?? 3,
      backoffMs: opts.backoffMs ?? 100,
      maxBackoffMs: opts.maxBackoffMs ?? 10_000,
      ...(opts.auth === undefined ? {} : { auth: opts.auth }),
      ...(opts.tls === undefined ? {} : { tls: opts.tls }),
    });
  }

  get urls(): readonly string[] {
    return this.transport.urls;
  }

  readonly topics = {
    create: async (name: string, settings: TopicSettings = {}): Promise<Topic> => {
      const r = await this.transport.request({
        method: "POST",
        path: "/v1/topics",
        contentType: "application/json",
        body: JSON.stringify({ name, ...settingsJson(settings) }),
        ctx: { topic: name },
      });
      return topicFromJson(parseJson(r.body));
    },
    /** Every topic (follows the pages). */
    list: async (): Promise<Topic[]> => {
      const out: Topic[] = [];
      let token = "";
      do {
        const r = await this.transport.request({
          method: "GET",
          path: "/v1/topics",
          query: { limit: 1000, page_token: token === "" ? undefined : token },
        });
        const page = parseJson(r.body) as { topics: Json[]; next_page_token: string };
        out.push(...page.topics.map(topicFromJson));
        token = page.next_page_token;
      } while (token !== "");
      return out;
    },
    get: async (name: string, opts: { partition?: number } = {}): Promise<TopicInfo> => {
      const r = await this.transport.request({
        method: "GET",
        path: `/v1/topics/${enc(name)}`,
        query: { partition: opts.partition },
        ctx: { topic: name },
      });
      return topicInfoFromJson(parseJson(r.body));
    },
    update: async (name: string, patch: TopicPatch): Promise<Topic> => {
      const r = await this.transport.request({
        method: "PATCH",
        path: `/v1/topics/${enc(name)}`,
        contentType: "application/json",
        body: JSON.stringify(settingsJson(patch)),
        ctx: { topic: name },
      });
      return topicFromJson(parseJson(r.body));
    },
    delete: async (name: string): Promise<void> => {
      await this.transport.request({
        method: "DELETE",
        path: `/v1/topics/${enc(name)}`,
        ctx: { topic: name },
      });
    },
    groups: async (name: string): Promise<GroupInfo[]> => {
      const r = await this.transport.request({
        method: "GET",
        path: `/v1/topics/${enc(name)}/groups`,
        ctx: { topic: name },
      });
      return ((parseJson(r.body).groups as Json[]) ?? []).map(groupFromJson);
    },
    /** Forgets a consumer group: its frontiers, leases and declaration. 404 (TopicNotFoundError's kin) when unknown. */
    deleteGroup: async (name: string, group: string): Promise<void> => {
      await this.transport.request({
        method: "DELETE",
        path: `/v1/topics/${enc(name)}/groups/${enc(group)}`,
        ctx: { topic: name },
      });
    },
    /**
     * Moves a group's committed offset (creating the group if unknown). The
     * broker answers once the new offsets are on disk; leases of the moved
     * partitions are dropped, so their receipt handles answer GONE. Safe to
     * repeat: the same target gives the same offsets.
     */
    seekGroup: async (name: string, group: string, target: GroupSeekTarget): Promise<GroupSeekResult> => {
      const r = await this.transport.request({
        method: "POST",
        path: `/v1/topics/${enc(name)}/groups/${enc(group)}/seek`,
        contentType: "application/json",
        body: JSON.stringify(target),
        ctx: { topic: name },
      });
      return groupSeekFromJson(parseJson(r.body));
    },
  };

  /**
   * One message, one request: 202 means it is on the broker's disk. Strings
   * are sent as UTF-8, Uint8Array as is, anything else as JSON. A retry after
   * a network error can store the message twice (no idempotent producer yet).
   */
  async produce(topic: string, payload: unknown, opts: ProduceOptions = {}): Promise<void> {
    await this.transport.request({
      method: "POST",
      path: `/v1/topics/${enc(topic)}/produce`,
      query: { key: opts.key, partition: opts.partition },
      contentType: "application/octet-stream",
      body: payloadBytes(payload),
      ctx: { topic },
    });
  }

  /** The message at (partition, offset), or undefined at the high-watermark. */
  async replay(topic: string, partition: number, offset: number): Promise<Message | undefined> {
    const r = await this.transport.request({
      method: "GET",
      path: `/v1/topics/${enc(topic)}/consume`,
      query: { partition, offset },
      ctx: { topic },
    });
    return r.status === 204 ? undefined : messageFromJson(parseJson(r.body));
  }

  /** Up to `limit` (≤ 1000) visible records from `offset`. */
  async read(topic: string, partition: number, offset: number, limit = 100): Promise<ReadResult> {
    const r = await this.transport.request({
      method: "GET",
      path: `/v1/topics/${enc(topic)}/records`,
      query: { partition, offset, limit },
      ctx: { topic },
    });
    const j = parseJson(r.body);
    return {
      records: (j.records as Json[]).map(messageFromJson),
      nextOffset: j.next_offset as number,
      highWatermark: j.high_watermark as number,
    };
  }

  /** `/admin/v1/status` of one broker (default: the first url). No failover: it is about that broker. */
  async status(url: string = this.urls[0] as string): Promise<NodeStatus> {
    const r = await this.transport.request({ method: "GET", path: "/admin/v1/status", url, retries: 0 });
    return parseJson(r.body) as unknown as NodeStatus;
  }

  producer(topic: string, opts: ProducerOptions = {}): Producer {
    if (this.#closed) throw new ClosedError("NaradClient");
    const p = new Producer(this, topic, opts);
    this.#closables.add(p);
    return p;
  }

  consumer(topic: string, opts: ConsumerOptions = {}): Consumer {
    if (this.#closed) throw new ClosedError("NaradClient");
    const c = new Consumer(this, topic, opts);
    this.#closables.add(c);
    return c;
  }

  /** Flushes and closes every producer, stops every consumer. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#closables].map((c) => c.close()));
    this.#closables.clear();
  }
}
