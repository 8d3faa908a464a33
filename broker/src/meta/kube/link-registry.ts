// The parent's side of a fan-out link on Kubernetes. The link itself lives
// on the child (spec.parent and the narad.dev/attachment annotation), but a
// limit over a parent's children (108) cannot be enforced by writes to the
// children: two brokers attaching at once each write a different object.
// So the parent's NaradTopic keeps the register of its children, the
// `narad.dev/children` annotation ({"<child>": "<attach epoch>"}), and every
// link change writes the two objects in an order that lets each
// compare-and-swap (a write conditional on the object's resourceVersion)
// decide one rule against the object it writes:
//
//   1. the parent has a register (seeded from the children in effect when a
//      parent from before the register has none);
//   2. the child's link is written, conditional on the child's version: it
//      is refused when the child already is (or is becoming) a child, or has
//      live children of its own;
//   3. the child is registered, conditional on the parent's version: refused
//      when the parent has 108 live children or is (becoming) a child itself.
//      Refused, the child's link of step 2 is taken back.
//
// A link is in effect only when both sides agree (the register names the
// child with the attachment's epoch), so a step 2 without its step 3 is a
// pending link that acts as none. An entry is live while its child still
// carries that epoch: epochs are random per attach and an entry is written
// only after its child carries the epoch (step 2 before 3), so once a child
// has dropped an epoch, the entry for it can never become live again and is
// pruned by the next write of the register. Pure: decides from the replica,
// which is one consistent snapshot (a single watch, in resourceVersion order).

/** The annotation on a parent NaradTopic: its registered children and their attach epochs. */
export const CHILDREN_ANNOTATION = "narad.dev/children";

export type LinkRegister = ReadonlyMap<string, string>;

const epochPattern = /^[0-9a-f]{16}$/;

/**
 * The register of a parent, from the annotation's value: undefined when the
 * annotation is absent (a parent from before registers: its children are
 * in effect by their side alone); a malformed value is an empty register
 * (its children become pending and are registered again).
 */
export function parseRegister(raw: string | undefined): LinkRegister | undefined {
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return new Map();
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return new Map();
  const out = new Map<string, string>();
  for (const [child, epoch] of Object.entries(v as Record<string, unknown>)) {
    if (typeof epoch === "string" && epochPattern.test(epoch)) out.set(child, epoch);
  }
  return out;
}

/** The annotation's value (children sorted, so equal registers are equal strings). */
export function formatRegister(register: LinkRegister): string {
  const entries = [...register.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(entries));
}

/**
 * The entries whose child still carries the registered epoch. `epochOf` is
 * the epoch of a topic's attachment annotation as it stands (undefined: no
 * attachment, or no such topic).
 */
export function liveEntries(
  register: LinkRegister,
  epochOf: (child: string) => string | undefined,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const [child, epoch] of register) if (epochOf(child) === epoch) out.set(child, epoch);
  return out;
}

export type RegisterDecision =
  /** Write this register (the child added, dead entries pruned). */
  | { kind: "write"; register: LinkRegister }
  /** Already registered with this epoch: nothing to write. */
  | { kind: "registered" }
  /** Refused: the reason, worded as the attach rules word it (409). */
  | { kind: "refuse"; reason: string };

/** Step 3: registering `child` with `epoch` under `parent` (its register and whether it carries an attachment). */
export function registerChild(args: {
  parent: string;
  register: LinkRegister;
  /** The parent's own attachment: it is, or is becoming, a child. */
  parentAttachedTo: string | undefined;
  child: string;
  epoch: string;
  epochOf: (child: string) => string | undefined;
  maxChildren: number;
}): RegisterDecision {
  const { parent, register, child, epoch } = args;
  if (register.get(child) === epoch) return { kind: "registered" };
  if (args.parentAttachedTo !== undefined)
    return {
      kind: "refuse",
      reason: `"${parent}" is a child of "${args.parentAttachedTo}": fan-out is one level deep`,
    };
  const live = liveEntries(register, args.epochOf);
  live.delete(child);
  if (live.size >= args.maxChildren)
    return { kind: "refuse", reason: `"${parent}" already has ${args.maxChildren} children, the maximum` };
  live.set(child, epoch);
  return { kind: "write", register: live };
}

/** The register without `child` (and without dead entries), or undefined when nothing changes. */
export function deregisterChild(
  register: LinkRegister,
  child: string,
  epochOf: (child: string) => string | undefined,
): LinkRegister | undefined {
  const live = liveEntries(register, epochOf);
  live.delete(child);
  return live.size === register.size ? undefined : live;
}

/**
 * Step 2: why `child` may not take a new link now, or undefined. `current`
 * is the child's attachment when it is in effect or pending (its parent
 * incarnation lives and spec still declares it), unless it is the very
 * attachment being completed (`epoch`); `liveChildren` its own live children.
 */
export function childLinkProblem(args: {
  child: string;
  epoch: string;
  current: { parent: string; epoch: string; pending: boolean } | undefined;
  liveChildren: number;
}): string | undefined {
  const { child, current } = args;
  if (current !== undefined && current.epoch !== args.epoch)
    return current.pending
      ? `"${child}" is being attached to "${current.parent}" (pending its parent's register)`
      : `"${child}" is already a child of "${current.parent}"`;
  if (args.liveChildren > 0) return `"${child}" has children of its own: fan-out is one level deep`;
  return undefined;
}
