import {
  type BrokerClient,
  BrokerClientError,
  type BrokerEndpoint,
  type BrokerMove,
  type BrokerStatus,
  type BrokerVolume,
  type TopicDataDeletion,
} from "./types.ts";

/** Scriptable in-memory brokers for controller tests, keyed by member id. */
export class FakeBrokerClient implements BrokerClient {
  readonly statuses = new Map<string, BrokerStatus>();
  /** The volume each member reports in its status (none when absent, like an older broker). */
  readonly volumes = new Map<string, BrokerVolume>();
  /** Members that fail every call (unreachable). */
  readonly unreachable = new Set<string>();
  /** Members that answer "not yet" to topic data deletion, with this reason. */
  readonly refuseDeletion = new Map<string, string>();
  /** Every successful topic data deletion, as "member/topic". */
  readonly deletions: string[] = [];
  readonly calls: string[] = [];
  /** Runs as each call is made, before it is answered (e.g. to lose the lease mid-reconcile). */
  onCall: (call: string) => void = () => {};
  /** Runs when a member starts or stops draining (a test's kubelet flips its pod's readiness). */
  onDrainChange: (id: string, draining: boolean) => void = () => {};

  async status(ep: BrokerEndpoint): Promise<BrokerStatus> {
    this.#called(`status ${ep.id}`);
    this.#check(ep);
    const volume = this.volumes.get(ep.id);
    const withVolume = (s: BrokerStatus): BrokerStatus => (volume === undefined ? s : { ...s, volume });
    if (this.draining.has(ep.id)) return withVolume(this.#drainStatus(ep));
    const s = this.statuses.get(ep.id);
    return withVolume(
      s ?? {
        nodeId: ep.id,
        ready: true,
        // A real broker refuses produce once its view shows it Decommissioning.
        draining: this.decommissioning.has(ep.id),
        wal: { pendingRecords: 0, checkpoint: 0, nextSeq: 0 },
      },
    );
  }

  /** Members whose (fake) metastore view shows them Decommissioning; tests keep it in sync. */
  readonly decommissioning = new Set<string>();

  /** Members whose drain leaves this many records pending (default: drains at once). */
  readonly stuckDrain = new Map<string, number>();
  /** Members currently draining (drain called, not cancelled). */
  readonly draining = new Set<string>();

  async drain(ep: BrokerEndpoint, waitMs: number): Promise<BrokerStatus> {
    this.#called(`drain ${ep.id} ${waitMs}`);
    this.#check(ep);
    if (!this.draining.has(ep.id)) {
      this.draining.add(ep.id);
      this.onDrainChange(ep.id, true);
    }
    return this.#drainStatus(ep);
  }

  async cancelDrain(ep: BrokerEndpoint): Promise<BrokerStatus> {
    this.#called(`cancelDrain ${ep.id}`);
    this.#check(ep);
    if (this.draining.delete(ep.id)) this.onDrainChange(ep.id, false);
    return this.status(ep);
  }

  #drainStatus(ep: BrokerEndpoint): BrokerStatus {
    const pending = this.stuckDrain.get(ep.id) ?? 0;
    return {
      nodeId: ep.id,
      ready: false,
      draining: true,
      wal: { pendingRecords: pending, checkpoint: 0, nextSeq: pending },
    };
  }

  async deleteTopicData(ep: BrokerEndpoint, topic: string): Promise<TopicDataDeletion> {
    this.#called(`delete ${ep.id} ${topic}`);
    this.#check(ep);
    const refusal = this.refuseDeletion.get(ep.id);
    if (refusal !== undefined) return { done: false, reason: refusal };
    this.deletions.push(`${ep.id}/${topic}`);
    return { done: true };
  }

  /** Moves by "destination/topic/partition". Tests advance their state. */
  readonly moves = new Map<string, BrokerMove & { from: string }>();
  /** State a newly started move reports (default "copying"). */
  moveStartState: BrokerMove["state"] = "copying";

  async startMove(ep: BrokerEndpoint, topic: string, partition: number, from: string): Promise<BrokerMove> {
    this.#called(`startMove ${ep.id} ${topic}/${partition} from ${from}`);
    this.#check(ep);
    const key = `${ep.id}/${topic}/${partition}`;
    const have = this.moves.get(key);
    if (have !== undefined && have.state !== "cancelled" && have.state !== "failed") {
      if (have.from !== from) throw new BrokerClientError(ep.id, "HTTP 409: another move runs", 409);
      return { state: have.state };
    }
    this.moves.set(key, { state: this.moveStartState, from });
    return { state: this.moveStartState };
  }

  async getMove(ep: BrokerEndpoint, topic: string, partition: number): Promise<BrokerMove | undefined> {
    this.#called(`getMove ${ep.id} ${topic}/${partition}`);
    this.#check(ep);
    const m = this.moves.get(`${ep.id}/${topic}/${partition}`);
    return m === undefined ? undefined : { state: m.state };
  }

  async cancelMove(ep: BrokerEndpoint, topic: string, partition: number): Promise<void> {
    this.#called(`cancelMove ${ep.id} ${topic}/${partition}`);
    this.#check(ep);
    const m = this.moves.get(`${ep.id}/${topic}/${partition}`);
    if (m !== undefined && m.state !== "done") m.state = "cancelled";
  }

  #called(call: string): void {
    this.calls.push(call);
    this.onCall(call);
  }

  #check(ep: BrokerEndpoint): void {
    if (this.unreachable.has(ep.id)) throw new BrokerClientError(ep.id, "connect ECONNREFUSED");
  }
}
