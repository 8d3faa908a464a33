import { BROKER_ADMIN_TIMEOUT_MS, BROKER_HTTP_PORT } from "../constants.ts";
import {
  type BrokerClient,
  BrokerClientError,
  type BrokerEndpoint,
  type BrokerStatus,
  type TopicDataDeletion,
} from "./types.ts";

/** Admin client over plain HTTP to http://<podIP>:7942 (Node's global fetch). */
export class HttpBrokerClient implements BrokerClient {
  readonly #port: number;
  readonly #timeoutMs: number;

  constructor(opts: { port?: number; timeoutMs?: number } = {}) {
    this.#port = opts.port ?? BROKER_HTTP_PORT;
    this.#timeoutMs = opts.timeoutMs ?? BROKER_ADMIN_TIMEOUT_MS;
  }

  async status(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus> {
    const res = await this.#request(ep, "GET", "/admin/v1/status", signal);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return parseStatus(ep.id, await res.json());
  }

  async drain(ep: BrokerEndpoint, waitMs: number, signal?: AbortSignal): Promise<BrokerStatus> {
    const wait = Math.max(0, Math.floor(waitMs));
    // The broker answers after its own bounded wait; allow for it.
    const res = await this.#request(ep, "POST", `/admin/v1/drain?wait_ms=${wait}`, signal, wait);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return parseStatus(ep.id, await res.json());
  }

  async cancelDrain(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus> {
    const res = await this.#request(ep, "DELETE", "/admin/v1/drain", signal);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return parseStatus(ep.id, await res.json());
  }

  async deleteTopicData(ep: BrokerEndpoint, topic: string, signal?: AbortSignal): Promise<TopicDataDeletion> {
    const path = `/admin/v1/topics/${encodeURIComponent(topic)}/data`;
    const res = await this.#request(ep, "DELETE", path, signal);
    if (res.status === 204 || res.status === 200 || res.status === 404) {
      await res.body?.cancel();
      return { done: true };
    }
    // 409: the broker still sees the topic in its metastore replica; 503: it
    // cannot confirm right now. Both clear up on their own: retry.
    if (res.status === 409 || res.status === 503) return { done: false, reason: await describe(res) };
    throw new BrokerClientError(ep.id, await describe(res), res.status);
  }

  async #request(
    ep: BrokerEndpoint,
    method: string,
    path: string,
    signal?: AbortSignal,
    extraMs = 0,
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#timeoutMs + extraMs);
    const url = `http://${hostPort(ep.podIP, this.#port)}${path}`;
    try {
      return await fetch(url, {
        method,
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
    } catch (err) {
      throw new BrokerClientError(ep.id, `${method} ${url}: ${errText(err)}`, undefined, { cause: err });
    }
  }
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

async function describe(res: Response): Promise<string> {
  let body = "";
  try {
    body = (await res.text()).slice(0, 300);
  } catch {
    // the body is only for the message
  }
  return `HTTP ${res.status}${body ? `: ${body}` : ""}`;
}

function errText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? ` (${err.cause.message})` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

/** Validates the fields the operator relies on; extra fields are ignored. */
export function parseStatus(memberId: string, body: unknown): BrokerStatus {
  const o = body as Record<string, unknown> | null;
  const wal = o?.["wal"] as Record<string, unknown> | undefined;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
  const pendingRecords = num(wal?.["pendingRecords"]);
  const checkpoint = num(wal?.["checkpoint"]);
  const nextSeq = num(wal?.["nextSeq"]);
  if (
    o === null ||
    typeof o["nodeId"] !== "string" ||
    typeof o["ready"] !== "boolean" ||
    typeof o["draining"] !== "boolean" ||
    pendingRecords === undefined ||
    checkpoint === undefined ||
    nextSeq === undefined
  ) {
    throw new BrokerClientError(memberId, `malformed status: ${JSON.stringify(body).slice(0, 300)}`);
  }
  return {
    nodeId: o["nodeId"],
    ready: o["ready"],
    draining: o["draining"],
    wal: { pendingRecords, checkpoint, nextSeq },
  };
}
