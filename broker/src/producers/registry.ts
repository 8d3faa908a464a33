// The durable producer registry behind POST /v1/producers: issues producer
// ids and epochs (registry-state.ts) and answers the current epoch of an id
// for fencing at ingress and at the partition owner.
//
// Stores: a JSON file under the data dir (single node; temp file + fsync +
// rename + dir fsync, like the file metastore), or an in-memory one shared by
// in-process test brokers.

import { mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { conflict } from "../errors.ts";
import {
  emptyRegistryState,
  epochIn,
  freshRegistryState,
  idOf,
  indexById,
  initNamed,
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
   * and a watched copy lags. Concurrent misses share one read.
   */
  lookup(id: string, epoch: number): Promise<number | undefined>;
  close(): Promise<void>;
}

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
): Promise<ProducerRegistry> {
  let { state, rev } = await store.load();
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
        rev = await store.save(r.state, rev);
        state = r.state;
        absorb(state);
        return r.out;
      } catch (err) {
        if (!(err instanceof RegistryConflict) || attempt >= 50) throw err;
        ({ state, rev } = await store.load());
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
  const readOnce = (): Promise<void> => {
    const p = store.load().then((r) => absorb(r.state));
    reading = p.finally(() => {
      reading = undefined;
    });
    return reading;
  };
  const refresh = (): Promise<void> => {
    if (reading === undefined) return readOnce();
    queued ??= reading
      .catch(() => {})
      .then(() => {
        queued = undefined;
        return readOnce();
      });
    return queued;
  };
  const epochOf = (id: string): number | undefined => {
    current();
    return epochIn(view, byId, id);
  };
  return {
    init: (name, fromEpoch) =>
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
          ({ state, rev } = await store.load());
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
      }),
    epochOf,
    lookup: async (id, epoch) => {
      const e = epochOf(id);
      if (e !== undefined && epoch <= e) return e;
      await refresh();
      return epochOf(id);
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
