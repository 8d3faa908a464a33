// The durable producer registry behind POST /v1/producers: issues producer
// ids and epochs (registry-state.ts) and answers the current epoch of an id
// for fencing at ingress and at the partition owner.
//
// Stores: a JSON file under the data dir (single node; temp file + fsync +
// rename + dir fsync, like the file metastore), or an in-memory one shared by
// in-process test brokers.
//
// Fencing across brokers (a shared store: kubernetes, in-process clusters;
// docs/adr/0008-producer-fence-lease.md, pure rules in core/producer-fence.ts):
// the view is trusted for an epoch decision only for leaseMs after a read of
// the store started (a decision after that reads first, or is refused with
// ProducerRegistryStaleError), and a re-init that bumped an epoch answers
// only once every other broker confirmed the new epoch or the lease has run
// out since the bump was written. Single node (one view, the only writer):
// no lease, no barrier.

import { mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import {
  afterRead,
  barrierDeadline,
  expired,
  type LeaseState,
  leaseDecision,
  noLease,
  readFailureHoldMs,
} from "../core/producer-fence.ts";
import { conflict, NaradError } from "../errors.ts";
import {
  emptyRegistryState,
  epochIn,
  freshRegistryState,
  idNumber,
  idOf,
  indexById,
  initNamed,
  maxRegistryEpoch,
  mergeRegistryStates,
  parseRegistryState,
  type RegistryState,
  reinitNamed,
  reserveBlock,
} from "./registry-state.ts";

export interface ProducerIdentity {
  id: string;
  epoch: number;
}

export interface ProducerRegistry {
  /**
   * Issues a new id (epoch 0), or for a known `name` its id with the next
   * epoch (durable before it resolves). With `fromEpoch` (a named producer
   * re-initialising itself) the bump happens only if the name is still at
   * that epoch; otherwise a newer instance took over and the call throws
   * ProducerFencedError, so a zombie cannot fence its successor.
   */
  init(name?: string, fromEpoch?: number): Promise<ProducerIdentity>;
  /** Current epoch of an issued id as this broker knows it (no I/O); undefined when it knows no such id. */
  epochOf(id: string): number | undefined;
  /**
   * Like epochOf, but when the local view cannot confirm `epoch` (the id is
   * unknown, or `epoch` is above the known one) it first re-reads the store:
   * another broker may have issued the id or bumped the epoch a moment ago,
   * and a watched copy lags. Concurrent misses share one read. With a fence
   * lease, a view older than the lease is re-read first too (shared by
   * concurrent callers); a read that fails then rejects with
   * ProducerRegistryStaleError.
   */
  lookup(id: string, epoch: number): Promise<number | undefined>;
  /**
   * For a decision made synchronously right after (the partition owner's
   * epoch check): undefined when the view may be used now, else a promise
   * that resolves once it may (after a read of the store) or rejects with
   * ProducerRegistryStaleError. Always undefined without a fence lease.
   */
  fence(): Promise<void> | undefined;
  /**
   * The re-init barrier's other side: another broker says it wrote `epoch`
   * for `id` durably and asks this one to hold it. Answers the epoch this
   * broker's view holds for `id` once it holds at least `epoch`, after a read
   * of the store that started after the call when the view held less
   * (undefined: the store does not know the id). The epoch is never taken
   * from the request: a write that completed before the call is in any read
   * that starts after it, and a confirmation no write backs (a confused or
   * hostile peer) must not fence a valid producer or make an unissued id
   * known. A failed read rejects with ProducerRegistryStaleError (the
   * initiator then waits out the lease).
   */
  confirmEpoch(id: string, epoch: number): Promise<number | undefined>;
  /** Only reads that start from now on count for the lease (this broker just joined the member list). */
  expireLease(): void;
  close(): Promise<void>;
}

/**
 * Fencing across brokers that share the store (cluster mode). Absent: one
 * broker owns the store (single node), its view is the store.
 */
export interface RegistryFenceOptions {
  /** A read of the store is trusted for epoch decisions this long after it started (--producer-fence-lease-ms). */
  leaseMs: number;
  /** Monotonic clock, ms. */
  nowMs: () => number;
  /**
   * False while this broker is not in its own member list: the barrier of a
   * broker that does not list it may not wait for it, so every decision
   * reads. Absent: always true.
   */
  trusted?: () => boolean;
  /**
   * Asks every other member to hold (id, epoch) (ConfirmProducerEpoch);
   * resolves true only when every member that may decide confirmed, within
   * `timeoutMs`. Absent: the barrier always waits out the lease.
   */
  confirm?: (id: string, epoch: number, timeoutMs: number) => Promise<boolean>;
  /** How a barrier ended and how long after the bump's write. */
  onBarrier?: (outcome: "confirmed" | "lease", ms: number) => void;
  /**
   * A read of the store for a decision, once per read (however many callers
   * share it), by RegistryReadReason; ok or failed.
   */
  onRead?: (reason: RegistryReadReason, ok: boolean) => void;
}

/**
 * Why a decision read the store: the lease ran out (or is in its last
 * quarter), a miss (an unknown id or a higher epoch), or a re-init barrier's
 * ConfirmProducerEpoch for an epoch above the view's.
 */
export type RegistryReadReason = "lease" | "miss" | "confirm";

/** Where the registry state lives: read it, and write a new one durably. */
export interface RegistryStore {
  /** The state and its revision (e.g. a resourceVersion). */
  load(): Promise<{ state: RegistryState; rev: string }>;
  /** Writes `state` if the stored revision is still `rev` (optimistic concurrency), else throws RegistryConflict. */
  save(state: RegistryState, rev: string): Promise<string>;
  /** The latest state known without I/O (shared memory, a watched copy), when the store has one. */
  peek?(): RegistryState;
  /** Stops what the store runs in the background (a watch). */
  close?(): Promise<void>;
}

export class RegistryConflict extends Error {}

/** A re-initialisation from an epoch the name has left behind. */
export class ProducerFencedError extends Error {}

/**
 * The view is older than the fence lease and the store could not be read:
 * this broker cannot tell whether an epoch was fenced through another one,
 * so it decides nothing (503 producer_registry_stale at ingress; the owner
 * holds the commit, which the dispatcher retries).
 */
export class ProducerRegistryStaleError extends NaradError {
  constructor(detail: string, cause?: unknown) {
    super(
      "UNAVAILABLE",
      `the producer registry cannot be read to confirm producer epochs (${detail}); retry`,
      {
        retryAfterSeconds: 1,
        ...(cause === undefined ? {} : { cause }),
      },
    );
    this.name = "ProducerRegistryStaleError";
  }
}

export const defaultIdBlock = 1000;

/**
 * A registry over `store`; inits are serialised, unnamed ids come from blocks
 * of `block`. A new name beyond `maxNamed` names is refused (409): every
 * named producer stays in the state for ever and each named init rewrites
 * the whole state, so without a cap any client could grow it without bound.
 */
export async function openProducerRegistry(
  store: RegistryStore,
  block = defaultIdBlock,
  maxNamed = Number.POSITIVE_INFINITY,
  fence?: RegistryFenceOptions,
): Promise<ProducerRegistry> {
  const now = fence?.nowMs ?? (() => performance.now());
  // The lease (core/producer-fence.ts): the start of the latest read of the
  // store that succeeded. Only reads and successful writes move it; the
  // store's watch (peek) never does: an event shows the object at some
  // revision, not that no later one exists.
  let lease: LeaseState = noLease();
  /** store.load(), counted for the lease from the moment it started. */
  const load = async (): Promise<{ state: RegistryState; rev: string }> => {
    const startedAt = now();
    const r = await store.load();
    lease = afterRead(lease, startedAt);
    return r;
  };
  let { state, rev } = await load();
  // What epochOf answers from: every state this broker wrote, loaded or saw
  // through the store's peek, merged (the state only grows, so the merge is
  // the newest of them; a lagging watch never takes back a bump seen here).
  let view = state;
  let byId = indexById(view);
  const absorb = (s: RegistryState): void => {
    const merged = mergeRegistryStates(view, s);
    if (merged === view) return;
    view = merged;
    byId = indexById(view);
  };
  let blockNext = 0;
  let blockEnd = 0;
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn);
    chain = run.catch(() => {});
    return run;
  };
  /** Applies `change` to the latest stored state, re-reading and retrying on a conflict. */
  const update = async <T>(change: (s: RegistryState) => { state: RegistryState; out: T }): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const r = change(state);
      // Nothing to write (a retried re-init answered from the state as it is).
      if (r.state === state) return r.out;
      try {
        // Durable before anything of it is answered: a crash after the write
        // and before the answer wastes a block or an epoch, never reuses one.
        const startedAt = now();
        rev = await store.save(r.state, rev);
        // A write accepted on revision `rev` means the stored state was ours
        // when it committed (after startedAt): as strong as a read then.
        lease = afterRead(lease, startedAt);
        state = r.state;
        absorb(state);
        return r.out;
      } catch (err) {
        if (!(err instanceof RegistryConflict) || attempt >= 50) throw err;
        ({ state, rev } = await load());
        absorb(state);
      }
    }
  };
  const freshNumber = async (): Promise<number> => {
    if (blockNext >= blockEnd) {
      const first = await update((s) => {
        const r = reserveBlock(s, block);
        return { state: r.state, out: r.first };
      });
      blockNext = first;
      blockEnd = first + block;
    }
    return blockNext++;
  };
  let lastPeeked: RegistryState | undefined;
  const current = (): void => {
    const peeked = store.peek?.();
    if (peeked === undefined || peeked === lastPeeked) return;
    lastPeeked = peeked;
    absorb(peeked);
  };
  // Re-reads for lookup(): a read already running may have started before the
  // caller's miss, so a caller arriving during one waits for the next.
  let reading: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  // The latest failed read, while no read succeeded since: within
  // readFailureHoldMs of it a decision is refused without another read.
  let failedRead: { at: number; err: unknown } | undefined;
  const readOnce = (reason: RegistryReadReason): Promise<void> => {
    const p = load().then(
      (r) => {
        failedRead = undefined;
        absorb(r.state);
        fence?.onRead?.(reason, true);
      },
      (err: unknown) => {
        failedRead = { at: now(), err };
        fence?.onRead?.(reason, false);
        throw err;
      },
    );
    reading = p.finally(() => {
      reading = undefined;
    });
    return reading;
  };
  /** A read that starts now, or right after the one in flight (which may have started before the caller came). */
  const refresh = (reason: RegistryReadReason): Promise<void> => {
    if (
      fence !== undefined &&
      failedRead !== undefined &&
      now() - failedRead.at < readFailureHoldMs(fence.leaseMs)
    )
      return Promise.reject(failedRead.err);
    if (reading === undefined) return readOnce(reason);
    queued ??= reading
      .catch(() => {})
      .then(() => {
        queued = undefined;
        return readOnce(reason);
      });
    return queued;
  };
  const epochOf = (id: string): number | undefined => {
    current();
    return epochIn(view, byId, id);
  };

  /** May the view decide now? Starts a background read when the lease is in its last quarter. */
  const leaseHolds = (): boolean => {
    if (fence === undefined) return true;
    const d = leaseDecision(lease, now(), fence.leaseMs, fence.trusted?.() ?? true, reading !== undefined);
    // A failure here only means the next decision after the lease reads (and may refuse).
    if (d === "valid-refresh") readOnce("lease").catch(() => {});
    return d !== "read";
  };
  /**
   * Resolves once a decision that arrived at `arrived` may use the view: the
   * lease holds again, or a read that started at or after `arrived`
   * succeeded (then the view is as fresh as a read at the arrival, however
   * long the read took). Joins a read in flight; one read serves every
   * caller waiting at once.
   */
  const freshen = async (arrived: number): Promise<void> => {
    const fresh = (): boolean =>
      leaseHolds() || (lease.readStartedAt >= arrived && lease.readStartedAt >= lease.trustFrom);
    try {
      if (reading !== undefined) {
        await reading;
        if (fresh()) return;
      }
      await refresh("lease");
    } catch (err) {
      throw new ProducerRegistryStaleError(err instanceof Error ? err.message : String(err), err);
    }
    if (!fresh()) throw new ProducerRegistryStaleError("the lease was expired during the read");
  };

  const sleep = (ms: number): { done: Promise<void>; cancel: () => void } => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let finish: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
      timer = setTimeout(resolve, Math.max(0, ms));
    });
    return {
      done,
      cancel: () => {
        clearTimeout(timer);
        finish();
      },
    };
  };
  /**
   * The re-init barrier: returns once every other broker confirmed `epoch`,
   * or once its lease must have run out since the bump was written
   * (`durableAt`, this broker's monotonic clock, taken after the write or the
   * read that found it). A confirmation that fails or comes late only means
   * waiting for the deadline; nothing is undone: the bump is durable.
   */
  const barrier = async (f: RegistryFenceOptions, id: string, epoch: number, durableAt: number) => {
    const deadline = barrierDeadline(durableAt, f.leaseMs);
    const wait = sleep(deadline - now());
    let outcome: "confirmed" | "lease" = "lease";
    if (f.confirm !== undefined) {
      const confirmed = f.confirm(id, epoch, Math.max(1, deadline - now())).catch(() => false);
      if (await Promise.race([confirmed, wait.done.then(() => false)])) {
        outcome = "confirmed";
        wait.cancel();
      }
    }
    await wait.done;
    f.onBarrier?.(outcome, now() - durableAt);
  };

  const issue = (name: string | undefined, fromEpoch: number | undefined): Promise<ProducerIdentity> =>
    serial(async () => {
      if (name === undefined) return { id: idOf(await freshNumber()), epoch: 0 };
      // A new name needs an id first (from this broker's block).
      current();
      // Both the merged view and the state this broker writes: either may hold names the other lacks yet.
      const known = Object.hasOwn(view.named, name) || Object.hasOwn(state.named, name);
      const names = new Set([...Object.keys(view.named), ...Object.keys(state.named)]).size;
      if (!known && names >= maxNamed)
        throw conflict(
          `the producer registry holds ${maxNamed} named producers, its limit (--max-named-producers); reuse a name or raise the limit`,
        );
      // An id reserved from a block whenever the state to be written lacks
      // the name: if a retry finds the name after all, that id is wasted,
      // never issued twice.
      const n = Object.hasOwn(state.named, name) ? -1 : await freshNumber();
      if (fromEpoch !== undefined) {
        // Decided on the stored state, not this broker's copy: a copy behind
        // a re-init made through another broker would fence the caller wrongly.
        ({ state, rev } = await load());
        absorb(state);
        return update((s) => {
          const r = reinitNamed(s, name, fromEpoch);
          if (r === "fenced") {
            const cur = Object.hasOwn(s.named, name) ? s.named[name] : undefined;
            throw new ProducerFencedError(
              `producer fenced: "${name}" is at epoch ${cur?.epoch ?? "none"}, not ${fromEpoch}; a newer instance took over`,
            );
          }
          return { state: r.state, out: { id: r.id, epoch: r.epoch } };
        });
      }
      return update((s) => {
        const r = initNamed(s, name, () => {
          if (n < 0) throw new Error(`producer "${name}" vanished from the registry`);
          return idOf(n);
        });
        return { state: r.state, out: { id: r.id, epoch: r.epoch } };
      });
    });

  return {
    init: async (name, fromEpoch) => {
      const out = await issue(name, fromEpoch);
      // Epoch 0 fences nobody. Every later epoch of a name was a bump (by
      // this call, or by the earlier attempt a retried re-init answers
      // from): taken after the write or the read that found it, `now()` is
      // at or after the moment the bump became durable. Outside the serial
      // chain: other inits do not wait for this barrier.
      if (fence !== undefined && name !== undefined && out.epoch > 0)
        await barrier(fence, out.id, out.epoch, now());
      return out;
    },
    epochOf,
    lookup: async (id, epoch) => {
      const arrived = now();
      if (!leaseHolds()) await freshen(arrived);
      const e = epochOf(id);
      if (e !== undefined && epoch <= e) return e;
      // A miss: a read that started after it (unless one already did).
      if (lease.readStartedAt < arrived) {
        try {
          await refresh("miss");
        } catch (err) {
          throw new ProducerRegistryStaleError(err instanceof Error ? err.message : String(err), err);
        }
      }
      return epochOf(id);
    },
    fence: () => (leaseHolds() ? undefined : freshen(now())),
    confirmEpoch: async (id, epoch) => {
      if (idNumber(id) === undefined || !Number.isInteger(epoch) || epoch < 0 || epoch > maxRegistryEpoch)
        throw new NaradError("BAD_REQUEST", `not a producer id and epoch: ${id} ${epoch}`);
      const held = epochOf(id);
      if (held !== undefined && held >= epoch) return held;
      // The asker's write returned before it asked, so a read that starts now
      // holds it. Shared with concurrent reads; counts for the lease too.
      try {
        await refresh("confirm");
      } catch (err) {
        throw new ProducerRegistryStaleError(err instanceof Error ? err.message : String(err), err);
      }
      return epochOf(id);
    },
    expireLease: () => {
      lease = expired(lease, now());
    },
    close: async () => {
      await chain;
      await store.close?.();
    },
  };
}

/** In memory (tests): one store shared by several in-process brokers is one registry's durable state. */
export function memoryRegistryStore(): RegistryStore {
  let saved = emptyRegistryState();
  let rev = 0;
  return {
    load: async () => ({ state: saved, rev: String(rev) }),
    save: async (s, expected) => {
      if (expected !== String(rev)) throw new RegistryConflict(`revision ${expected} is stale (now ${rev})`);
      saved = s;
      rev++;
      return String(rev);
    },
    peek: () => saved,
  };
}

/**
 * <dataDir>/metastore/producers.json. A missing file is a fresh registry
 * (random first id, registry-state.ts), the same one until it is first saved.
 */
export function fileRegistryStore(dataDir: string, block = defaultIdBlock): RegistryStore {
  const dir = join(dataDir, "metastore");
  const file = join(dir, "producers.json");
  let fresh: RegistryState | undefined;
  return {
    async load() {
      await mkdir(dir, { recursive: true });
      try {
        return { state: parseRegistryState(await readFile(file, "utf8")), rev: "file" };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") {
          fresh ??= freshRegistryState(block);
          return { state: fresh, rev: "file" };
        }
        throw err;
      }
    },
    // One broker owns the data dir (its LOCK): no concurrent writer, so no revision check.
    async save(s) {
      const tmp = `${file}.tmp`;
      const fh = await open(tmp, "w");
      try {
        await fh.writeFile(`${JSON.stringify(s)}\n`);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, file);
      const d = await open(dir, "r");
      try {
        await d.sync();
      } finally {
        await d.close();
      }
      return "file";
    },
  };
}
