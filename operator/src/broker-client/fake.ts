import {
  type BrokerClient,
  BrokerClientError,
  type BrokerEndpoint,
  type BrokerStatus,
  type TopicDataDeletion,
} from "./types.ts";

/** Scriptable in-memory brokers for controller tests, keyed by member id. */
export class FakeBrokerClient implements BrokerClient {
  readonly statuses = new Map<string, BrokerStatus>();
  /** Members that fail every call (unreachable). */
  readonly unreachable = new Set<string>();
  /** Members that answer "not yet" to topic data deletion, with this reason. */
  readonly refuseDeletion = new Map<string, string>();
  /** Every successful topic data deletion, as "member/topic". */
  readonly deletions: string[] = [];
  readonly calls: string[] = [];

  async status(ep: BrokerEndpoint): Promise<BrokerStatus> {
    this.calls.push(`status ${ep.id}`);
    this.#check(ep);
    if (this.draining.has(ep.id)) return this.#drainStatus(ep);
    const s = this.statuses.get(ep.id);
    return (
      s ?? {
        nodeId: ep.id,
        ready: true,
        draining: false,
        wal: { pendingRecords: 0, checkpoint: 0, nextSeq: 0 },
      }
    );
  }

  /** Members whose drain leaves this many records pending (default: drains at once). */
  readonly stuckDrain = new Map<string, number>();
  /** Members currently draining (drain called, not cancelled). */
  readonly draining = new Set<string>();

  async drain(ep: BrokerEndpoint, waitMs: number): Promise<BrokerStatus> {
    this.calls.push(`drain ${ep.id} ${waitMs}`);
    this.#check(ep);
    this.draining.add(ep.id);
    return this.#drainStatus(ep);
  }

  async cancelDrain(ep: BrokerEndpoint): Promise<BrokerStatus> {
    this.calls.push(`cancelDrain ${ep.id}`);
    this.#check(ep);
    this.draining.delete(ep.id);
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
    this.calls.push(`delete ${ep.id} ${topic}`);
    this.#check(ep);
    const refusal = this.refuseDeletion.get(ep.id);
    if (refusal !== undefined) return { done: false, reason: refusal };
    this.deletions.push(`${ep.id}/${topic}`);
    return { done: true };
  }

  #check(ep: BrokerEndpoint): void {
    if (this.unreachable.has(ep.id)) throw new BrokerClientError(ep.id, "connect ECONNREFUSED");
  }
}
