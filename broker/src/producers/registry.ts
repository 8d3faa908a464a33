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
  idOf,
  indexById,
  initNamed,
  type RegistryState,
  reserveBlock,
} from "./registry-state.ts";

export interface ProducerIdentity {
  id: string;
  epoch: number;
}

export interface ProducerRegistry {
  /** Issues a new id (epoch 0), or for a known `name` its id with the next epoch (durable before it resolves). */
  init(name?: string): Promise<ProducerIdentity>;
  /** Current epoch of an issued id; undefined when the registry never issued it. */
  epochOf(id: string): number | undefined;
  close(): Promise<void>;
}

/** Where the registry state lives: read it, and write a new one durably. */
export interface RegistryStore {
  /** The state and its revision (e.g. a resourceVersion). */
  load(): Promise<{ state: RegistryState; rev: string }>;
  /** Writes `state` if the stored revision is still `rev` (optimistic concurrency), else throws RegistryConflict. */
  save(state: RegistryState, rev: string): Promise<string>;
  /** The latest state known without I/O, when the store can tell (shared memory); else the registry's own copy is used. */
  peek?(): RegistryState;
}

export class RegistryConflict extends Error {}

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
  let byId = indexById(state);
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
      try {
        rev = await store.save(r.state, rev);
        state = r.state;
        byId = indexById(state);
        return r.out;
      } catch (err) {
        if (!(err instanceof RegistryConflict) || attempt >= 50) throw err;
        ({ state, rev } = await store.load());
        byId = indexById(state);
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
  let peekedState: RegistryState | undefined;
  let peekedIds = new Map<string, number>();
  const current = (): { s: RegistryState; ids: Map<string, number> } => {
    const peeked = store.peek?.();
    if (peeked === undefined || peeked === state) return { s: state, ids: byId };
    if (peeked !== peekedState) {
      peekedState = peeked;
      peekedIds = indexById(peeked);
    }
    return { s: peeked, ids: peekedIds };
  };
  return {
    init: (name) =>
      serial(async () => {
        if (name === undefined) return { id: idOf(await freshNumber()), epoch: 0 };
        // A new name needs an id first (from this broker's block).
        const latest = store.peek?.() ?? state;
        const known = Object.hasOwn(latest.named, name);
        if (!known && Object.keys(latest.named).length >= maxNamed)
          throw conflict(
            `the producer registry holds ${maxNamed} named producers, its limit (--max-named-producers); reuse a name or raise the limit`,
          );
        const n = known ? -1 : await freshNumber();
        return update((s) => {
          const r = initNamed(s, name, () => idOf(n >= 0 ? n : s.nextId));
          return { state: r.state, out: { id: r.id, epoch: r.epoch } };
        });
      }),
    epochOf: (id) => {
      const c = current();
      return epochIn(c.s, c.ids, id);
    },
    close: () => chain.then(() => undefined),
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

/** <dataDir>/metastore/producers.json. */
export function fileRegistryStore(dataDir: string): RegistryStore {
  const dir = join(dataDir, "metastore");
  const file = join(dir, "producers.json");
  return {
    async load() {
      await mkdir(dir, { recursive: true });
      try {
        return { state: JSON.parse(await readFile(file, "utf8")) as RegistryState, rev: "file" };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT")
          return { state: emptyRegistryState(), rev: "file" };
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
