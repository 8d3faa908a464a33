// The producer registry's state and its pure transitions: which producer ids
// were issued, and the current epoch of each named producer. Ids are
// `p-<n>`; a broker takes a block of n values at a time (one durable write
// per block), so unnamed producers cost no write each. A named producer keeps
// its id; each re-initialisation bumps its epoch, fencing the previous
// instance. Unnamed producers have epoch 0.

export interface RegistryState {
  version: 1;
  /** Every id below p-<nextId> (and from p-<firstId> on) may have been issued. */
  nextId: number;
  /** Where this registry started issuing (a fresh one starts at a random block); absent: 0. */
  firstId?: number;
  named: Record<string, NamedProducer>;
}

export interface NamedProducer {
  id: string;
  epoch: number;
  /**
   * Set when this epoch came from a re-initialisation from epoch `from` (the
   * instance that held it asked): a retry of that request, whose answer was
   * lost, gets this epoch again instead of being fenced by its own bump.
   */
  from?: number;
}

export const emptyRegistryState = (): RegistryState => ({ version: 1, nextId: 0, named: {} });

export const producerNamePattern = /^[A-Za-z0-9._-]{1,128}$/;
export const maxRegistryEpoch = 0xffff_ffff;

export const idOf = (n: number): string => `p-${n}`;

/** The numeric part of an issued-id-shaped string, or undefined. */
export function idNumber(id: string): number | undefined {
  const m = /^p-(0|[1-9][0-9]{0,14})$/.exec(id);
  return m === null ? undefined : Number(m[1]);
}

/** The state after reserving [state.nextId, state.nextId + size). */
export function reserveBlock(state: RegistryState, size: number): { state: RegistryState; first: number } {
  return { state: { ...state, nextId: state.nextId + size }, first: state.nextId };
}

/**
 * The state after (re)initialising `name`: a new id from `freshId` when the
 * name is new (epoch 0), else the same id with the epoch bumped.
 */
export function initNamed(
  state: RegistryState,
  name: string,
  freshId: () => string,
): { state: RegistryState; id: string; epoch: number } {
  // Own entries only: "constructor" or "__proto__" are valid names, not Object.prototype's members.
  const cur = Object.hasOwn(state.named, name) ? state.named[name] : undefined;
  if (cur !== undefined && cur.epoch >= maxRegistryEpoch)
    throw new Error(`producer "${name}" has used every epoch`);
  const next = cur === undefined ? { id: freshId(), epoch: 0 } : { id: cur.id, epoch: cur.epoch + 1 };
  return { state: { ...state, named: { ...state.named, [name]: next } }, ...next };
}

/**
 * A named producer re-initialising itself from `fromEpoch`: "fenced" when the
 * name has moved on (a newer instance, or no such name), else its next epoch
 * (or, for a retry of that same re-init, the epoch it already got).
 */
export function reinitNamed(
  state: RegistryState,
  name: string,
  fromEpoch: number,
): { state: RegistryState; id: string; epoch: number } | "fenced" {
  const cur = Object.hasOwn(state.named, name) ? state.named[name] : undefined;
  if (cur === undefined) return "fenced";
  if (cur.from === fromEpoch && cur.epoch === fromEpoch + 1) return { state, id: cur.id, epoch: cur.epoch };
  if (cur.epoch !== fromEpoch) return "fenced";
  if (cur.epoch >= maxRegistryEpoch) throw new Error(`producer "${name}" has used every epoch`);
  const next = { id: cur.id, epoch: cur.epoch + 1, from: fromEpoch };
  return { state: { ...state, named: { ...state.named, [name]: next } }, id: next.id, epoch: next.epoch };
}

/** The epoch of an issued id, or undefined when this state never issued it. */
export function epochIn(
  state: RegistryState,
  byId: ReadonlyMap<string, number>,
  id: string,
): number | undefined {
  const named = byId.get(id);
  if (named !== undefined) return named;
  const n = idNumber(id);
  return n !== undefined && n >= (state.firstId ?? 0) && n < state.nextId ? 0 : undefined;
}

export function indexById(state: RegistryState): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of Object.values(state.named)) m.set(v.id, v.epoch);
  return m;
}

/**
 * The union of two views of the registry. Every transition only grows the
 * state (nextId up, names added, epochs up), so the newer of two views is
 * their element-wise maximum: a broker merges the state it wrote itself with
 * a watched copy that may lag behind that write, and never goes back.
 */
export function mergeRegistryStates(a: RegistryState, b: RegistryState): RegistryState {
  if (a === b) return a;
  const named: RegistryState["named"] = { ...a.named };
  for (const [name, v] of Object.entries(b.named)) {
    const cur = Object.hasOwn(named, name) ? named[name] : undefined;
    if (cur === undefined || v.epoch > cur.epoch) named[name] = v;
  }
  const firstId = Math.min(a.firstId ?? 0, b.firstId ?? 0);
  return { version: 1, nextId: Math.max(a.nextId, b.nextId), ...(firstId > 0 ? { firstId } : {}), named };
}

/** A stored registry state, checked field by field: a store (a ConfigMap anyone with access can edit) is input. */
export function parseRegistryState(text: string): RegistryState {
  const raw = JSON.parse(text) as unknown;
  if (typeof raw !== "object" || raw === null) throw new Error("producer registry: not a JSON object");
  const r = raw as { version?: unknown; nextId?: unknown; firstId?: unknown; named?: unknown };
  if (r.version !== 1) throw new Error(`producer registry: unknown version ${String(r.version)}`);
  if (typeof r.nextId !== "number" || !Number.isSafeInteger(r.nextId) || r.nextId < 0)
    throw new Error("producer registry: nextId is not a non-negative integer");
  if (
    r.firstId !== undefined &&
    (typeof r.firstId !== "number" ||
      !Number.isSafeInteger(r.firstId) ||
      r.firstId < 0 ||
      r.firstId > r.nextId)
  )
    throw new Error("producer registry: firstId is not an integer in [0, nextId]");
  if (typeof r.named !== "object" || r.named === null || Array.isArray(r.named))
    throw new Error("producer registry: named is not an object");
  const named: RegistryState["named"] = {};
  for (const [name, v] of Object.entries(r.named as Record<string, unknown>)) {
    const e = v as { id?: unknown; epoch?: unknown; from?: unknown } | null;
    if (
      typeof e !== "object" ||
      e === null ||
      typeof e.id !== "string" ||
      idNumber(e.id) === undefined ||
      typeof e.epoch !== "number" ||
      !Number.isInteger(e.epoch) ||
      e.epoch < 0 ||
      e.epoch > maxRegistryEpoch ||
      (e.from !== undefined && e.from !== e.epoch - 1)
    )
      throw new Error(`producer registry: bad entry for "${name}"`);
    named[name] = { id: e.id, epoch: e.epoch, ...(e.from === undefined ? {} : { from: e.epoch - 1 }) };
  }
  return { version: 1, nextId: r.nextId, ...(r.firstId === undefined ? {} : { firstId: r.firstId }), named };
}

/**
 * Where a brand-new registry starts issuing ids: a random multiple of `block`
 * below 10^12. A registry that was lost (its ConfigMap deleted while the
 * partition logs, which remember producers by id, survive) must not re-issue
 * the ids the logs remember; starting far from 0 makes that improbable.
 */
export function freshRegistryState(block: number, random: () => number = Math.random): RegistryState {
  const blocks = Math.floor(1e12 / block);
  const first = Math.floor(random() * blocks) * block;
  // firstId: the ids below the start were never issued here, so they stay unknown.
  return { version: 1, nextId: first, firstId: first, named: {} };
}
