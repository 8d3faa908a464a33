// The producer registry's state and its pure transitions: which producer ids
// were issued, and the current epoch of each named producer. Ids are
// `p-<n>`; a broker takes a block of n values at a time (one durable write
// per block), so unnamed producers cost no write each. A named producer keeps
// its id; each re-initialisation bumps its epoch, fencing the previous
// instance. Unnamed producers have epoch 0.

export interface RegistryState {
  version: 1;
  /** Every id below p-<nextId> may have been issued. */
  nextId: number;
  named: Record<string, { id: string; epoch: number }>;
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

/** The epoch of an issued id, or undefined when this state never issued it. */
export function epochIn(
  state: RegistryState,
  byId: ReadonlyMap<string, number>,
  id: string,
): number | undefined {
  const named = byId.get(id);
  if (named !== undefined) return named;
  const n = idNumber(id);
  return n !== undefined && n < state.nextId ? 0 : undefined;
}

export function indexById(state: RegistryState): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of Object.values(state.named)) m.set(v.id, v.epoch);
  return m;
}
