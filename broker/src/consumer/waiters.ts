// Long-poll waiters for queue consume. A waiter sleeps until the partition
// it waits on (or any partition of its topic) gets new records or a lease
// is released, or until its own deadline (one timer per waiter, none per
// message). The number of waiters is capped; beyond it consume gets 503.
//
// Lost-wakeup guard: each topic has a version bumped by every wake. A
// consumer snapshots it before trying, and wait() returns at once when it
// moved in between.
//
// Bounded memory: versions are kept for at most maxTrackedTopics topics
// (least recently woken evicted first), so topic churn cannot grow the map
// forever. A version is a value of one node-wide counter, and an evicted
// topic reads as the highest version ever evicted (the floor): a topic's
// version therefore never goes down and rises on every wake of it, so an
// eviction can cause a spurious wake-up (the consumer simply tries again),
// never a lost one.

export type WaitOutcome = "woken" | "timeout" | "closed";

interface Waiter {
  group: string;
  /** undefined: any partition of the topic. */
  partition: number | undefined;
  resolve: (o: WaitOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** Default bound on the topics whose wake version is remembered. */
export const defaultMaxTrackedTopics = 4096;

export class WaiterSet {
  readonly #max: number;
  readonly #maxTracked: number;
  readonly #byTopic = new Map<string, Set<Waiter>>();
  /** Insertion order = least recently woken first (a wake re-inserts). */
  readonly #versions = new Map<string, number>();
  #clock = 0;
  /** Highest version evicted from #versions: what an untracked topic reads as. */
  #floor = 0;
  #count = 0;
  #closed = false;

  constructor(maxWaiters: number, maxTrackedTopics = defaultMaxTrackedTopics) {
    this.#max = maxWaiters;
    this.#maxTracked = Math.max(1, maxTrackedTopics);
  }

  get size(): number {
    return this.#count;
  }

  /** Topics whose version is remembered (bounded by maxTrackedTopics). */
  get trackedTopics(): number {
    return this.#versions.size;
  }

  version(topic: string): number {
    return this.#versions.get(topic) ?? this.#floor;
  }

  #bump(topic: string): void {
    this.#versions.delete(topic);
    this.#versions.set(topic, ++this.#clock);
    while (this.#versions.size > this.#maxTracked) {
      const [oldest, v] = this.#versions.entries().next().value as [string, number];
      this.#versions.delete(oldest);
      if (v > this.#floor) this.#floor = v;
    }
  }

  /** Whether another waiter fits. */
  hasRoom(): boolean {
    return !this.#closed && this.#count < this.#max;
  }

  wait(
    topic: string,
    group: string,
    partition: number | undefined,
    ms: number,
    sinceVersion: number,
    signal?: AbortSignal,
  ): Promise<WaitOutcome> {
    if (this.#closed || signal?.aborted) return Promise.resolve("closed");
    if (this.version(topic) !== sinceVersion) return Promise.resolve("woken");
    if (this.#count >= this.#max) return Promise.resolve("timeout");
    return new Promise<WaitOutcome>((resolve) => {
      let set = this.#byTopic.get(topic);
      if (set === undefined) {
        set = new Set();
        this.#byTopic.set(topic, set);
      }
      const topicSet = set;
      const onAbort = () => finish("closed");
      const finish = (o: WaitOutcome) => {
        if (!topicSet.delete(w)) return;
        this.#count--;
        clearTimeout(w.timer);
        signal?.removeEventListener("abort", onAbort);
        if (topicSet.size === 0 && this.#byTopic.get(topic) === topicSet) this.#byTopic.delete(topic);
        resolve(o);
      };
      const w: Waiter = { group, partition, resolve: finish, timer: setTimeout(() => finish("timeout"), ms) };
      topicSet.add(w);
      this.#count++;
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Wakes the waiters of `topic` that may now find a message on `partition`:
   * those waiting on it or on any partition, of `group` (or of every group
   * when undefined, as for new records).
   */
  wake(topic: string, partition: number, group?: string): void {
    this.#bump(topic);
    const set = this.#byTopic.get(topic);
    if (set === undefined) return;
    for (const w of [...set]) {
      if (w.partition !== undefined && w.partition !== partition) continue;
      if (group !== undefined && w.group !== group) continue;
      w.resolve("woken");
    }
  }

  /** Wakes every waiter of a topic (it was deleted or recreated). */
  wakeTopic(topic: string): void {
    this.#bump(topic);
    for (const w of [...(this.#byTopic.get(topic) ?? [])]) w.resolve("woken");
  }

  /** Resolves every waiter with "closed" and refuses new ones. */
  close(): void {
    this.#closed = true;
    for (const set of [...this.#byTopic.values()]) for (const w of [...set]) w.resolve("closed");
  }
}
