import type { Clock } from "./clock.ts";
import { sleep } from "./clock.ts";

// Leader election on a coordination.k8s.io/v1 Lease, after client-go's
// leaderelection package:
// - expiry is judged by the LOCAL time at which we last saw the lease record
//   change, never by the renewTime written by another host (clock skew);
// - writes carry the resourceVersion we read, so two candidates racing for
//   an expired lease cannot both win (the loser gets 409);
// - a leader that cannot renew within renewDeadline stops leading before the
//   lease can expire for others (renewDeadline < leaseDuration), so two
//   leaders never act at once as long as clocks tick at the same rate;
// - on shutdown a leader releases the lease (empty holder) so a successor
//   need not wait out the duration;
// - a term ends before the next one starts: onStoppedLeading may return a
//   promise (the old term's reconciles draining), and the elector neither
//   campaigns again nor calls onStartedLeading until it has settled, so a
//   re-acquired lease never runs two reconciles of one key.

/** The fields of a Lease we read and write. */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: Date | undefined;
  renewTime: Date | undefined;
  leaseTransitions: number;
  resourceVersion: string | undefined;
}

export interface LeaseStore {
  /** undefined when the Lease does not exist. */
  get(): Promise<LeaseRecord | undefined>;
  /** Fails (any error) if it already exists. */
  create(record: LeaseRecord): Promise<LeaseRecord>;
  /** Fails (any error) if record.resourceVersion is stale. */
  update(record: LeaseRecord): Promise<LeaseRecord>;
}

export interface LeaderElectionOptions {
  store: LeaseStore;
  clock: Clock;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  onStartedLeading: () => void;
  /** May return a promise: the next term waits for it (the old one's work to finish). */
  onStoppedLeading: () => void | Promise<void>;
  onNewLeader?: (identity: string) => void;
  log: (level: "info" | "warn" | "debug", msg: string, fields?: Record<string, unknown>) => void;
}

export class LeaderElector {
  readonly #o: LeaderElectionOptions;
  #leading = false;
  #observed: LeaseRecord | undefined;
  #observedAtMs = 0;
  #lastLeader = "";
  #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(opts: LeaderElectionOptions) {
    this.#o = opts;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** Starts campaigning; runs until stop(). */
  start(): void {
    if (this.#loop !== undefined) return;
    this.#stop = new AbortController();
    this.#loop = this.#run(this.#stop.signal);
  }

  /** Stops campaigning; a leader stops leading and releases the lease. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    this.#loop = undefined;
    if (this.#leading) {
      await this.#setLeading(false);
      await this.#release();
    }
  }

  async #run(signal: AbortSignal): Promise<void> {
    const { clock, retryPeriodMs, renewDeadlineMs } = this.#o;
    while (!signal.aborted) {
      // Candidate: try until we hold the lease.
      while (!signal.aborted && !(await this.#tryAcquireOrRenew())) {
        await sleep(clock, retryPeriodMs, signal);
      }
      if (signal.aborted) return;
      await this.#setLeading(true);
      // Leader: renew every retry period; give up once renewDeadline passes
      // without a successful renewal, or at once if someone else holds it.
      let lastRenewMs = clock.now();
      while (!signal.aborted) {
        await sleep(clock, retryPeriodMs, signal);
        if (signal.aborted) return;
        const ok = await this.#tryAcquireOrRenew(renewDeadlineMs - (clock.now() - lastRenewMs));
        if (ok) {
          lastRenewMs = clock.now();
          continue;
        }
        const lostToOther =
          this.#observed !== undefined && this.#observed.holderIdentity !== this.#o.identity;
        if (lostToOther || clock.now() - lastRenewMs >= renewDeadlineMs) {
          this.#o.log("warn", "leader election: lost the lease", {
            reason: lostToOther ? "held by another candidate" : "renew deadline passed",
            holder: this.#observed?.holderIdentity,
          });
          await this.#setLeading(false);
          break;
        }
      }
    }
  }

  /** Resolves once the transition's callback has finished (stopping: the old term is over). */
  async #setLeading(leading: boolean): Promise<void> {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#o.log("info", leading ? "leader election: started leading" : "leader election: stopped leading", {
      identity: this.#o.identity,
    });
    if (leading) {
      this.#o.onStartedLeading();
      return;
    }
    try {
      await this.#o.onStoppedLeading();
    } catch (err) {
      this.#o.log("warn", "leader election: stopping the term failed", { err: errMessage(err) });
    }
  }

  /** One attempt; a request slower than timeoutMs counts as a failure. */
  async #tryAcquireOrRenew(timeoutMs = this.#o.renewDeadlineMs): Promise<boolean> {
    try {
      return await withTimeout(this.#attempt(), Math.max(1, timeoutMs), this.#o.clock);
    } catch (err) {
      this.#o.log("debug", "leader election: attempt failed", { err: errMessage(err) });
      return false;
    }
  }

  async #attempt(): Promise<boolean> {
    const { store, clock, identity, leaseDurationMs } = this.#o;
    const now = clock.now();
    const current = await store.get();
    const desired = (prev: LeaseRecord | undefined): LeaseRecord => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: prev !== undefined && prev.holderIdentity === identity ? prev.acquireTime : new Date(now),
      renewTime: new Date(now),
      leaseTransitions:
        prev === undefined ? 0 : prev.leaseTransitions + (prev.holderIdentity === identity ? 0 : 1),
      resourceVersion: prev?.resourceVersion,
    });
    if (current === undefined) {
      this.#record(await store.create(desired(undefined)));
      return true;
    }
    this.#observe(current);
    const heldByOther = current.holderIdentity !== "" && current.holderIdentity !== identity;
    if (heldByOther && this.#observedAtMs + current.leaseDurationSeconds * 1000 > now) {
      return false;
    }
    this.#record(await store.update(desired(current)));
    return true;
  }

  /** Remember when the record last changed, by our own clock. */
  #observe(rec: LeaseRecord): void {
    const prev = this.#observed;
    const changed =
      prev === undefined ||
      prev.holderIdentity !== rec.holderIdentity ||
      prev.renewTime?.getTime() !== rec.renewTime?.getTime() ||
      prev.resourceVersion !== rec.resourceVersion;
    if (changed) {
      this.#observed = rec;
      this.#observedAtMs = this.#o.clock.now();
    }
    if (rec.holderIdentity !== this.#lastLeader) {
      this.#lastLeader = rec.holderIdentity;
      if (rec.holderIdentity !== "") this.#o.onNewLeader?.(rec.holderIdentity);
    }
  }

  #record(rec: LeaseRecord): void {
    this.#observe(rec);
  }

  async #release(): Promise<void> {
    const { store, identity, clock } = this.#o;
    try {
      const current = await store.get();
      if (current === undefined || current.holderIdentity !== identity) return;
      await store.update({
        ...current,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        renewTime: new Date(clock.now()),
      });
      this.#o.log("info", "leader election: released the lease", { identity });
    } catch (err) {
      this.#o.log("warn", "leader election: release failed; the lease will expire", { err: errMessage(err) });
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, clock: Clock): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.after(ms, () => reject(new Error(`timed out after ${ms}ms`)));
    p.then(
      (v) => {
        timer.cancel();
        resolve(v);
      },
      (e: unknown) => {
        timer.cancel();
        reject(e);
      },
    );
  });
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
