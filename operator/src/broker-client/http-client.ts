import https from "node:https";
import { BROKER_ADMIN_TIMEOUT_MS, BROKER_HTTP_PORT } from "../constants.ts";
import type { BrokerAuth, CredentialSource } from "./credentials.ts";
import {
  type BrokerClient,
  BrokerClientError,
  type BrokerEndpoint,
  type BrokerMove,
  type BrokerStatus,
  type BrokerVolume,
  type TopicDataDeletion,
} from "./types.ts";

/**
 * Admin client over plain HTTP to http://<podIP>:7942 (Node's global fetch).
 *
 * Every reply is matched to the member it was meant for: a pod IP can be
 * reused by another pod (another broker, of this cluster or another), so a
 * status whose nodeId is not the endpoint's id is an error (callers treat it
 * as unreachable), and a call with a side effect (drain, cancel, moves,
 * topic data) is only sent after a status reply from that address named the
 * right node. Replies that carry a nodeId are checked again.
 */
export class HttpBrokerClient implements BrokerClient {
  readonly #port: number;
  readonly #timeoutMs: number;

  readonly #credentials: CredentialSource | undefined;

  constructor(opts: { port?: number; timeoutMs?: number; credentials?: CredentialSource } = {}) {
    this.#port = opts.port ?? BROKER_HTTP_PORT;
    this.#timeoutMs = opts.timeoutMs ?? BROKER_ADMIN_TIMEOUT_MS;
    this.#credentials = opts.credentials;
  }

  async status(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus> {
    const res = await this.#request(ep, "GET", "/admin/v1/status", signal);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return sameNode(ep, parseStatus(ep.id, await res.json()));
  }

  async drain(ep: BrokerEndpoint, waitMs: number, signal?: AbortSignal): Promise<BrokerStatus> {
    await this.status(ep, signal);
    const wait = Math.max(0, Math.floor(waitMs));
    // The broker answers after its own bounded wait; allow for it.
    const res = await this.#request(ep, "POST", `/admin/v1/drain?wait_ms=${wait}`, signal, wait);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return sameNode(ep, parseStatus(ep.id, await res.json()));
  }

  async cancelDrain(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus> {
    await this.status(ep, signal);
    const res = await this.#request(ep, "DELETE", "/admin/v1/drain", signal);
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return sameNode(ep, parseStatus(ep.id, await res.json()));
  }

  async deleteTopicData(ep: BrokerEndpoint, topic: string, signal?: AbortSignal): Promise<TopicDataDeletion> {
    await this.status(ep, signal);
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

  async startMove(
    ep: BrokerEndpoint,
    topic: string,
    partition: number,
    from: string,
    signal?: AbortSignal,
  ): Promise<BrokerMove> {
    await this.status(ep, signal);
    const res = await this.#request(ep, "PUT", movePath(topic, partition), signal, 0, { from });
    if (res.status !== 202 && res.status !== 200)
      throw new BrokerClientError(ep.id, await describe(res), res.status);
    return parseMove(ep.id, await res.json());
  }

  async getMove(
    ep: BrokerEndpoint,
    topic: string,
    partition: number,
    signal?: AbortSignal,
  ): Promise<BrokerMove | undefined> {
    await this.status(ep, signal);
    const res = await this.#request(ep, "GET", movePath(topic, partition), signal);
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (res.status !== 200) throw new BrokerClientError(ep.id, await describe(res), res.status);
    return parseMove(ep.id, await res.json());
  }

  async cancelMove(
    ep: BrokerEndpoint,
    topic: string,
    partition: number,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.status(ep, signal);
    const res = await this.#request(ep, "DELETE", movePath(topic, partition), signal);
    // 404: never started or already forgotten; 409: already done. Both end the matter.
    if (res.status < 300 || res.status === 404 || res.status === 409) {
      await res.body?.cancel();
      return;
    }
    throw new BrokerClientError(ep.id, await describe(res), res.status);
  }

  async #request(
    ep: BrokerEndpoint,
    method: string,
    path: string,
    signal?: AbortSignal,
    extraMs = 0,
    json?: unknown,
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(this.#timeoutMs + extraMs);
    let auth: BrokerAuth | undefined;
    try {
      auth = await this.#credentials?.(ep);
    } catch (err) {
      throw new BrokerClientError(ep.id, `credentials: ${errText(err)}`, undefined, { cause: err });
    }
    const url = `${auth?.tls === undefined ? "http" : "https"}://${hostPort(ep.podIP, this.#port)}${path}`;
    const headers: Record<string, string> = {};
    if (json !== undefined) headers["content-type"] = "application/json";
    if (auth?.bearer !== undefined) headers["authorization"] = `Bearer ${auth.bearer}`;
    const init = {
      method,
      headers,
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    };
    try {
      return auth?.tls === undefined ? await fetch(url, init) : await httpsRequest(url, init, auth.tls.ca);
    } catch (err) {
      throw new BrokerClientError(ep.id, `${method} ${url}: ${errText(err)}`, undefined, { cause: err });
    }
  }
}

/** The reply came from the broker the endpoint names, or an error (treated as unreachable). */
function sameNode(ep: BrokerEndpoint, s: BrokerStatus): BrokerStatus {
  if (s.nodeId !== ep.id)
    throw new BrokerClientError(
      ep.id,
      `${ep.podIP} answered as node ${JSON.stringify(s.nodeId)}, not ${ep.id} (pod IP reused?)`,
      undefined,
    );
  return s;
}

function movePath(topic: string, partition: number): string {
  return `/admin/v1/moves/${encodeURIComponent(topic)}/${partition}`;
}

const MOVE_STATES: ReadonlySet<string> = new Set(["copying", "ready", "done", "failed", "cancelled"]);

/** Validates a move status; extra fields are ignored. */
export function parseMove(memberId: string, body: unknown): BrokerMove {
  const o = body as Record<string, unknown> | null;
  const state = o?.["state"];
  if (o === null || typeof state !== "string" || !MOVE_STATES.has(state))
    throw new BrokerClientError(memberId, `malformed move status: ${JSON.stringify(body).slice(0, 300)}`);
  const move: BrokerMove = { state: state as BrokerMove["state"] };
  for (const k of ["copiedBytes", "sourceHwm", "destHwm"] as const) {
    const v = o[k];
    if (typeof v === "number" && Number.isFinite(v)) move[k] = v;
  }
  if (typeof o["error"] === "string") move.error = o["error"];
  return move;
}

/**
 * One HTTPS request with a custom trust root (fetch cannot take one without
 * undici), answered as a fetch Response. No host-name check: pod IPs.
 */
function httpsRequest(
  url: string,
  init: { method: string; headers: Record<string, string>; signal: AbortSignal; body?: string },
  ca: string | undefined,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: init.method,
        headers: init.headers,
        signal: init.signal,
        ...(ca === undefined ? { rejectUnauthorized: false } : { ca, checkServerIdentity: () => undefined }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const status = res.statusCode ?? 502;
          const nullBody = status === 204 || status === 205 || status === 304;
          resolve(new Response(nullBody ? null : Buffer.concat(chunks), { status }));
        });
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
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
  const status: BrokerStatus = {
    nodeId: o["nodeId"],
    ready: o["ready"],
    draining: o["draining"],
    wal: { pendingRecords, checkpoint, nextSeq },
  };
  const owned = num(o["ownedPartitions"]);
  if (owned !== undefined) status.ownedPartitions = owned;
  const held = num(o["movedAwayCopies"]);
  if (held !== undefined) status.movedAwayCopies = held;
  const volume = parseVolume(o["volume"]);
  if (volume !== undefined) status.volume = volume;
  return status;
}

/** The status's `volume` object; undefined when absent or not one this client understands. */
function parseVolume(v: unknown): BrokerVolume | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if ((o["state"] === "created" || o["state"] === "own") && typeof o["uuid"] === "string" && o["uuid"] !== "")
    return {
      state: o["state"],
      uuid: o["uuid"],
      memberId: typeof o["memberId"] === "string" ? o["memberId"] : "",
    };
  if (o["state"] === "foreign")
    return {
      state: "foreign",
      reason: typeof o["reason"] === "string" ? o["reason"] : "",
      uuid: typeof o["uuid"] === "string" && o["uuid"] !== "" ? o["uuid"] : null,
    };
  return undefined;
}
