// In-process test clusters: several brokers in one vitest process sharing
// one in-memory metastore (src/testing/memory-metastore.ts), each with its
// own temp data dir, HTTP API and cluster RPC server on 127.0.0.1:0. The
// test plays the operator: it publishes members and their states and swaps
// partition owners on `mc` directly.
//
// What every cluster test used to copy (loadConfig, a temp dir, startBroker,
// setMember, crash-and-remove in afterEach) lives here once; what differs
// between tests for a reason (config, hooks, a wrapped metastore view, a
// shared producer registry, extra CLI flags, a per-node logger, publishing
// late) is an option. See docs/testing.md#cluster-tests.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Logger, pino } from "pino";
import { type Config, loadConfig } from "../../src/config.ts";
import * as k from "../../src/constants.ts";
import type { MemberState, Metastore } from "../../src/meta/types.ts";
import { type RunningBroker, type StartBrokerOptions, startBroker } from "../../src/node.ts";
import { createPeerPool, type PeerPoolOptions } from "../../src/rpc/client.ts";
import { createMemoryCluster, type MemoryCluster } from "../../src/testing/memory-metastore.ts";

export interface TestNode {
  readonly id: string;
  /** The data dir (kept across kill/restart; removed at teardown). */
  readonly dir: string;
  readonly broker: RunningBroker;
  /** http://host:port of the node's API (a real listening socket). */
  readonly url: string;
  /** host:port of the node's cluster RPC server. */
  readonly clusterAddress: string;
}

/** How one broker is started. Cluster-wide defaults and per-node options merge (per node wins). */
export interface NodeOptions {
  /** Start on this data dir (a restart); default: a new temp dir. */
  dir?: string;
  /** Extra CLI flags, e.g. ["--cluster-secret-file", f]. */
  args?: string[];
  /** Config fields to set over the loaded config (after the harness defaults). */
  config?: Partial<Omit<Config, "dispatch">>;
  /** Dispatcher fields to set (after the harness defaults). */
  dispatch?: Partial<Config["dispatch"]>;
  /** Wraps the node's metastore view (a lagging watch, per-pair links, a flip at a chosen moment). */
  metastore?: (id: string, view: Metastore) => Metastore;
  /** The node's logger; default: pino at NARAD_TEST_LOG (silent), child { node: id }. */
  logger?: (id: string) => Logger;
  /** Publish the member (setMember) once started; default true. False: call cluster.publish later. */
  publish?: boolean;
  /** The member state published; default Active. */
  state?: MemberState;
  testHooks?: StartBrokerOptions["testHooks"];
  producerRegistryStore?: StartBrokerOptions["producerRegistryStore"];
  moveTiming?: StartBrokerOptions["moveTiming"];
}

/** Options for the whole cluster: a temp dir prefix and the defaults of every node. */
export interface ClusterOptions extends Omit<NodeOptions, "dir" | "state" | "publish"> {
  /** Temp dir names: `${prefix}-${id}-XXXXXX` under the OS temp dir. Default "narad-cluster". */
  prefix?: string;
}

const defaultLogger = pino({ level: process.env.NARAD_TEST_LOG ?? "silent" });

/**
 * What every in-process cluster test runs with: a 5 s drain bound (a
 * teardown never waits the production 25 s) and a 100 ms dispatcher retry
 * after a failed commit (a test heals a fault and waits for the backlog; the
 * production 1 s backoff only makes that slower).
 */
const harnessConfig = { drainTimeoutMs: 5_000 } as const;
const harnessDispatch = { errorBackoffMs: 100 } as const;

export class TestCluster {
  readonly mc: MemoryCluster = createMemoryCluster();
  readonly #opts: ClusterOptions;
  readonly #nodes = new Map<string, TestNode>();
  readonly #dirs: string[] = [];
  /** Each id's last data dir, kept after a kill for restart(). */
  readonly #dirById = new Map<string, string>();

  constructor(opts: ClusterOptions = {}) {
    this.#opts = opts;
  }

  /** Starts one broker and (unless publish: false) publishes it as a member. */
  async start(id: string, node: NodeOptions = {}): Promise<TestNode> {
    if (this.#nodes.has(id)) throw new Error(`test cluster: ${id} is running; kill it first`);
    const o = this.#opts;
    const dir = node.dir ?? this.tempDir(`${o.prefix ?? "narad-cluster"}-${id}`);
    const base = loadConfig(
      [
        ...["--data-dir", dir, "--addr", "127.0.0.1:0", "--cluster-addr", "127.0.0.1:0", "--node-id", id],
        // The test plays the operator for single-copy owners; a replication
        // test passes --replication on (later flags win).
        ...["--replication", "off"],
        ...(o.args ?? []),
        ...(node.args ?? []),
      ],
      {},
      id,
    );
    const config: Config = {
      ...base,
      ...harnessConfig,
      ...o.config,
      ...node.config,
      dispatch: { ...base.dispatch, ...harnessDispatch, ...o.dispatch, ...node.dispatch },
    };
    const wrap = node.metastore ?? o.metastore;
    const hooks = node.testHooks ?? o.testHooks;
    const registry = node.producerRegistryStore ?? o.producerRegistryStore;
    const moveTiming = node.moveTiming ?? o.moveTiming;
    const logger = (node.logger ?? o.logger)?.(id) ?? defaultLogger.child({ node: id });
    const broker = await startBroker(config, logger, {
      metastore: wrap ? wrap(id, this.mc.metastore()) : this.mc.metastore(),
      ...(hooks === undefined ? {} : { testHooks: hooks }),
      ...(registry === undefined ? {} : { producerRegistryStore: registry }),
      ...(moveTiming === undefined ? {} : { moveTiming }),
    });
    const started: TestNode = {
      id,
      dir,
      broker,
      url: `http://${broker.httpAddress}`,
      clusterAddress: broker.cluster!.address,
    };
    this.#nodes.set(id, started);
    this.#dirById.set(id, dir);
    if (node.publish ?? true) this.publish(id, node.state ?? "Active");
    return started;
  }

  /** Starts the brokers one after another (in order: partition assignment is round-robin by id). */
  async startAll(ids: readonly string[], node: NodeOptions = {}): Promise<TestNode[]> {
    const out: TestNode[] = [];
    for (const id of ids) out.push(await this.start(id, node));
    return out;
  }

  /** Publishes (or re-publishes) a running node as a member in `state`, as the operator would. */
  publish(id: string, state: MemberState = "Active"): void {
    const n = this.node(id);
    this.mc.setMember({ id, address: n.broker.httpAddress, clusterAddress: n.clusterAddress, state });
  }

  node(id: string): TestNode {
    const n = this.#nodes.get(id);
    if (n === undefined) throw new Error(`test cluster: no running node ${id}`);
    return n;
  }

  /** The running nodes, in start order. */
  nodes(): TestNode[] {
    return [...this.#nodes.values()];
  }

  /** The in-process kill -9 (crash(): no drain, no flush); the data dir stays for a restart. */
  async kill(id: string): Promise<TestNode> {
    const n = this.node(id);
    this.#nodes.delete(id);
    await n.broker.crash();
    return n;
  }

  /**
   * Starts `id` again on its data dir (killing it first if it runs). Only the
   * cluster defaults and `node` apply: the options of the earlier start
   * (hooks, a wrapped view) are not carried over, so a fault injected into
   * the first life does not follow the node into the next.
   */
  async restart(id: string, node: Omit<NodeOptions, "dir"> = {}): Promise<TestNode> {
    if (this.#nodes.has(id)) await this.kill(id);
    return this.start(id, { ...node, dir: this.#dirOf(id) });
  }

  /** A temp dir removed at teardown (certificates, secret files). */
  tempDir(prefix: string): string {
    const d = mkdtempSync(join(tmpdir(), `${prefix}-`));
    this.#dirs.push(d);
    return d;
  }

  /** Crashes every running broker and removes every temp dir. Safe to call twice. */
  async teardown(): Promise<void> {
    const nodes = [...this.#nodes.values()];
    this.#nodes.clear();
    for (const n of nodes) await n.broker.crash().catch(() => undefined);
    for (const d of this.#dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }

  #dirOf(id: string): string {
    const d = this.#dirById.get(id);
    if (d === undefined) throw new Error(`test cluster: ${id} never ran`);
    return d;
  }
}

/**
 * A factory whose clusters are torn down by `hook` (vitest's afterEach or
 * afterAll): `const clusters = testClusters(afterEach, { prefix: "narad-x" })`,
 * then `const tc = clusters.create()` in a test.
 */
export function testClusters(hook: (fn: () => Promise<void>) => void, defaults: ClusterOptions = {}) {
  const made: TestCluster[] = [];
  hook(async () => {
    for (const c of made.splice(0)) await c.teardown();
  });
  return {
    create(overrides: ClusterOptions = {}): TestCluster {
      const c = new TestCluster({ ...defaults, ...overrides });
      made.push(c);
      return c;
    },
  };
}

/**
 * One request through the node's fastify app (inject: no socket). An object
 * body is sent as JSON; a string as is (a produce payload); `headers` add to
 * (and may replace) the content type.
 */
export async function req(
  node: TestNode,
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  body?: string | object,
  headers: Record<string, string> = {},
) {
  const res = await node.broker.app.inject({
    method,
    url,
    payload: typeof body === "object" ? JSON.stringify(body) : body,
    headers: { ...(typeof body === "object" ? { "content-type": "application/json" } : {}), ...headers },
  });
  // json() is untyped on purpose: each test reads the fields it asserts on.
  return { status: res.statusCode, headers: res.headers, text: res.body, json: () => JSON.parse(res.body) };
}

/** Polls `check` every `pollMs` until it holds; throws after `timeoutMs` naming `what`. */
export async function eventually(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  pollMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** The value of one metric line (`name` plus its exact `{labels}`) at the node, 0 when absent. */
export async function metric(node: TestNode, name: string, labels = ""): Promise<number> {
  const text = (await req(node, "GET", "/metrics")).text;
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.slice(`${name}${labels} `.length));
}

/** Records in the node's ingress WAL not yet committed at their owner. */
export async function walPending(node: TestNode): Promise<number> {
  return (await req(node, "GET", "/admin/v1/status")).json().wal.pendingRecords as number;
}

/** Whether every node's WAL is fully dispatched. */
export async function drained(nodes: readonly TestNode[]): Promise<boolean> {
  for (const n of nodes) if ((await walPending(n)) !== 0) return false;
  return true;
}

/**
 * One produce-batch request: a record { id } (plus `pad`, to make records
 * bigger) per id, key k<id>, all pinned to `partition`: one WAL group at the
 * node, so one dispatcher pass and one commit batch.
 */
export function produceIds(
  node: TestNode,
  topic: string,
  ids: readonly number[],
  partition: number,
  pad?: string,
) {
  const body = ids
    .map((id) =>
      JSON.stringify({ key: `k${id}`, partition, payload: pad === undefined ? { id } : { id, pad } }),
    )
    .join("\n");
  return req(node, "POST", `/v1/topics/${topic}/produce-batch`, body, {
    "content-type": "application/x-ndjson",
  });
}

/** The high watermark of one partition, through the node (owner-routed); throws on a non-200. */
export async function hwm(node: TestNode, topic: string, partition: number): Promise<number> {
  const r = await req(node, "GET", `/v1/topics/${topic}?partition=${partition}`);
  if (r.status !== 200) throw new Error(`stats ${topic}/${partition}: ${r.status} ${r.text}`);
  return r.json().partition_stats[0].high_watermark as number;
}

/**
 * A cluster RPC client that is no member (a confused peer, a client with the
 * wrong secret): the production pool with the broker's RPC constants and
 * short test deadlines.
 */
export function testPeerPool(
  opts: { defaultDeadlineMs?: number; interceptors?: PeerPoolOptions["interceptors"] } = {},
) {
  return createPeerPool({
    maxMessageBytes: k.rpcMaxMessageBytes,
    commitRequestBytes: k.rpcCommitRequestBytes,
    readTimeoutMs: 5_000,
    defaultDeadlineMs: opts.defaultDeadlineMs ?? 5_000,
    keepaliveTimeMs: k.rpcKeepaliveTimeMs,
    keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
    reconnectBackoffInitialMs: 100,
    reconnectBackoffMaxMs: 1_000,
    flowControlWindowBytes: k.rpcFlowControlWindowBytes,
    retryAfterSeconds: 1,
    ...(opts.interceptors === undefined ? {} : { interceptors: opts.interceptors }),
  });
}
