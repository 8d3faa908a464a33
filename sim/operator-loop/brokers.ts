// The brokers as the operator's admin client meets them: one SimBroker per
// member id, whose process can be up, down or frozen, whose WAL count lives
// on its volume (it survives the pod), and whose partition moves advance
// with the world's clock. SimBrokerClient answers the operator the way
// broker-client/http-client.ts would: a refused connection for a process
// that is down, a timeout for a frozen one, the node id the process really
// has (so a reply from the wrong broker is an error, as the real client
// checks).

import {
  type BrokerClient,
  BrokerClientError,
  type BrokerEndpoint,
  type BrokerMove,
  type BrokerStatus,
  type TopicDataDeletion,
} from "../../operator/src/broker-client/types.ts";

export interface SimBroker {
  readonly id: string;
  readonly ordinal: number;
  process: "up" | "down";
  /** SIGSTOPped: the process exists, answers nothing. */
  frozen: boolean;
  /** World ms the current process started (readiness needs a little time). */
  startedAtMs: number;
  /** Drain requested by the operator and not cancelled (a restart clears it). */
  draining: boolean;
  /** Acknowledged records on the volume not yet dispatched to their owners. */
  walPending: number;
  /** The pod (uid) this process runs in; undefined while no pod. */
  podUid: string | undefined;
  /** Its view of its own membership: it refuses produce once this is Decommissioning or Removed. */
  decommissioning: boolean;
  /** A held partition: nothing dispatches until this world time. */
  dispatchHeldUntilMs: number;
}

export interface SimMove {
  topic: string;
  partition: number;
  from: string;
  to: string;
  state: BrokerMove["state"];
  /** World ms the copy completes (if both processes are up). */
  readyAtMs: number;
}

/** A broker call, as the world sees it, with the leadership term that made it. */
export interface BrokerCall {
  term: number;
  what: string;
  broker: string;
}

export class SimBrokers {
  readonly byId = new Map<string, SimBroker>();
  /** Moves by "destination/topic/partition". */
  readonly moves = new Map<string, SimMove>();
  /** Pod IP → member id of the pod holding it now (the world keeps it). */
  readonly ipOwner = new Map<string, string>();
  /** Every call made, for the invariants (a call from a deposed term is a violation). */
  readonly calls: BrokerCall[] = [];
  /** Owner of each partition as the brokers' metastore view shows it ("topic/p" → member). */
  ownerOf: (topic: string, partition: number) => string | undefined = () => undefined;
  /** Partitions a member owns in that view. */
  ownedBy: (id: string) => number = () => 0;

  broker(id: string): SimBroker {
    let b = this.byId.get(id);
    if (b === undefined) {
      const ordinal = Number(id.slice(id.lastIndexOf("-") + 1));
      b = {
        id,
        ordinal,
        process: "down",
        frozen: false,
        startedAtMs: 0,
        draining: false,
        walPending: 0,
        podUid: undefined,
        decommissioning: false,
        dispatchHeldUntilMs: 0,
      };
      this.byId.set(id, b);
    }
    return b;
  }

  available(b: SimBroker): boolean {
    return b.process === "up" && !b.frozen;
  }

  /** Moved-away copies a source keeps until the destination serves them (state ready, swapped, not done). */
  movedAwayCopies(id: string): number {
    let n = 0;
    for (const m of this.moves.values())
      if (m.from === id && m.state === "ready" && this.ownerOf(m.topic, m.partition) === m.to) n++;
    return n;
  }

  /** The client the operator uses in term `term` (currentTerm is asked at each call). */
  client(term: number): BrokerClient {
    return new SimBrokerClient(this, term);
  }

  /** The process answering at this endpoint, or the error a real client would get. */
  reach(ep: BrokerEndpoint): SimBroker {
    const holder = this.ipOwner.get(ep.podIP);
    const b = holder === undefined ? undefined : this.byId.get(holder);
    if (b === undefined || b.process === "down")
      throw new BrokerClientError(ep.id, `connect ECONNREFUSED ${ep.podIP}:7941`);
    if (b.frozen) throw new BrokerClientError(ep.id, "The operation was aborted due to timeout");
    if (b.id !== ep.id)
      throw new BrokerClientError(
        ep.id,
        `${ep.podIP} answered as node "${b.id}", not ${ep.id} (pod IP reused?)`,
      );
    return b;
  }

  status(b: SimBroker): BrokerStatus {
    const refusing = b.draining || b.decommissioning;
    return {
      nodeId: b.id,
      ready: !refusing,
      draining: refusing,
      wal: { pendingRecords: b.walPending, checkpoint: 0, nextSeq: b.walPending },
      ownedPartitions: this.ownedBy(b.id),
      movedAwayCopies: this.movedAwayCopies(b.id),
    };
  }
}

class SimBrokerClient implements BrokerClient {
  readonly #sim: SimBrokers;
  readonly #term: number;
  constructor(sim: SimBrokers, term: number) {
    this.#sim = sim;
    this.#term = term;
  }

  #call(what: string, ep: BrokerEndpoint): SimBroker {
    this.#sim.calls.push({ term: this.#term, what, broker: ep.id });
    return this.#sim.reach(ep);
  }

  async status(ep: BrokerEndpoint): Promise<BrokerStatus> {
    return this.#sim.status(this.#call("status", ep));
  }

  async drain(ep: BrokerEndpoint): Promise<BrokerStatus> {
    const b = this.#call("drain", ep);
    b.draining = true;
    return this.#sim.status(b);
  }

  async cancelDrain(ep: BrokerEndpoint): Promise<BrokerStatus> {
    const b = this.#call("cancelDrain", ep);
    b.draining = false;
    return this.#sim.status(b);
  }

  async deleteTopicData(ep: BrokerEndpoint, topic: string): Promise<TopicDataDeletion> {
    this.#call(`deleteTopicData ${topic}`, ep);
    return { done: true };
  }

  async startMove(ep: BrokerEndpoint, topic: string, partition: number, from: string): Promise<BrokerMove> {
    const b = this.#call(`startMove ${topic}/${partition} from ${from}`, ep);
    const key = `${b.id}/${topic}/${partition}`;
    const have = this.#sim.moves.get(key);
    if (have !== undefined && have.state !== "cancelled" && have.state !== "failed") {
      if (have.from !== from) throw new BrokerClientError(ep.id, "HTTP 409: another move runs", 409);
      return { state: have.state };
    }
    this.#sim.moves.set(key, { topic, partition, from, to: b.id, state: "copying", readyAtMs: Number.NaN });
    return { state: "copying" };
  }

  async getMove(ep: BrokerEndpoint, topic: string, partition: number): Promise<BrokerMove | undefined> {
    const b = this.#call(`getMove ${topic}/${partition}`, ep);
    const m = this.#sim.moves.get(`${b.id}/${topic}/${partition}`);
    return m === undefined ? undefined : { state: m.state };
  }

  async cancelMove(ep: BrokerEndpoint, topic: string, partition: number): Promise<void> {
    const b = this.#call(`cancelMove ${topic}/${partition}`, ep);
    const m = this.#sim.moves.get(`${b.id}/${topic}/${partition}`);
    if (m !== undefined && m.state !== "done") m.state = "cancelled";
  }
}
