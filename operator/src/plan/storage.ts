// Volume expansion of a cluster's broker PVCs (pure). The controller gathers
// the claims and their StorageClass; this decides what to patch and what the
// status says.
//
// Rules:
// - spec.storage.size above a claim's request: expand, but only when the
//   claim's StorageClass has allowVolumeExpansion (else the API server would
//   refuse the patch anyway): refused otherwise, nothing is patched.
// - spec.storage.size below any claim's request: refused (Kubernetes cannot
//   shrink a PVC); nothing is patched, not even claims that could grow.
// - Only bound claims are patched (the API server allows resizing bound
//   claims only); an unbound one waits.
// - Expansion is done for a claim once its status.capacity reaches the size
//   (an unbound claim already requesting the size is being provisioned at
//   it, not expanded); until every claim is done the cluster shows the
//   progress.
// The StatefulSet's volumeClaimTemplates are immutable and are left as they
// were: a claim the StatefulSet creates later (scale-up) starts at the old
// template size and is expanded by the same rules once bound.

export interface ClaimView {
  name: string;
  /** spec.resources.requests.storage */
  request: string | undefined;
  /** status.capacity.storage */
  capacity: string | undefined;
  /** spec.storageClassName (resolved by the API server for claims created without one). */
  storageClassName: string | undefined;
  bound: boolean;
  /** Types of the claim's True conditions (Resizing, FileSystemResizePending, ...). */
  conditions: readonly string[];
}

export interface StorageClassView {
  name: string;
  allowVolumeExpansion: boolean;
}

export interface StorageInput {
  /** spec.storage.size */
  size: string;
  claims: readonly ClaimView[];
  /** The StorageClasses the claims name (missing ones are absent). */
  classes: readonly StorageClassView[];
}

export type StorageRefusal = "VolumeExpansionUnsupported" | "VolumeShrinkUnsupported" | "InvalidStorageSize";

export type StoragePlan =
  /** Every claim is at (or above) the size, or there are no claims yet. */
  | { kind: "settled" }
  /** Grow `patch` to `size`; `pending` claims (incl. those) are not there yet. */
  | { kind: "expanding"; size: string; patch: string[]; pending: string[]; message: string }
  | { kind: "refused"; reason: StorageRefusal; message: string };

export function planStorage(input: StorageInput): StoragePlan {
  const want = quantityBytes(input.size);
  if (!Number.isFinite(want)) {
    return {
      kind: "refused",
      reason: "InvalidStorageSize",
      message: `spec.storage.size ${input.size} is not a storage quantity`,
    };
  }
  const claims = [...input.claims].sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));

  const larger = claims.filter((c) => c.request !== undefined && quantityBytes(c.request) > want);
  if (larger.length > 0) {
    const list = larger.map((c) => `${c.name}=${c.request}`).join(", ");
    return {
      kind: "refused",
      reason: "VolumeShrinkUnsupported",
      message: `spec.storage.size ${input.size} is smaller than existing volumes (${list}); Kubernetes cannot shrink a PersistentVolumeClaim, volumes are kept as they are`,
    };
  }

  const below = (q: string | undefined) => q === undefined || quantityBytes(q) < want;
  const toGrow = claims.filter((c) => below(c.request));
  const classes = new Map(input.classes.map((c) => [c.name, c]));
  const blocked = toGrow.filter((c) => classes.get(c.storageClassName ?? "")?.allowVolumeExpansion !== true);
  if (blocked.length > 0) {
    const names = [...new Set(blocked.map((c) => c.storageClassName ?? "(none)"))];
    const why = names
      .map((n) =>
        n === "(none)"
          ? "a claim without a StorageClass"
          : classes.has(n)
            ? `StorageClass ${n} does not allow volume expansion (allowVolumeExpansion is not true)`
            : `StorageClass ${n} not found`,
      )
      .join("; ");
    return {
      kind: "refused",
      reason: "VolumeExpansionUnsupported",
      message: `cannot grow ${blocked.map((c) => c.name).join(", ")} to ${input.size}: ${why}; volumes are kept as they are`,
    };
  }

  const patch = toGrow.filter((c) => c.bound).map((c) => c.name);
  // An unbound claim already requesting the size is being provisioned at it,
  // not expanded: only bound claims wait for capacity.
  const pendingClaims = claims.filter((c) => below(c.request) || (c.bound && below(c.capacity)));
  if (pendingClaims.length === 0) return { kind: "settled" };
  const done = claims.length - pendingClaims.length;
  const detail = pendingClaims
    .map((c) => {
      if (!c.bound) return `${c.name}: not bound yet`;
      const state = c.conditions.includes("FileSystemResizePending")
        ? "file system resize pending"
        : c.conditions.includes("Resizing")
          ? "resizing"
          : "requested";
      return `${c.name}: ${c.capacity ?? "?"} (${state})`;
    })
    .join(", ");
  return {
    kind: "expanding",
    size: input.size,
    patch,
    pending: pendingClaims.map((c) => c.name),
    message: `expanding volumes to ${input.size}: ${done}/${claims.length} done; ${detail}`,
  };
}

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** A Kubernetes storage quantity in bytes ("10Gi", "500M", "1.5Gi", "1e9"); NaN when malformed. */
export function quantityBytes(q: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(?:([eE][0-9]+)|([KMGTPE]i|[kMGTPE])?)$/.exec(q.trim());
  if (m === null) return Number.NaN;
  const n = Number(m[1]);
  if (m[2] !== undefined) return n * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? "";
  const mult = BINARY[suffix] ?? DECIMAL[suffix];
  return mult === undefined ? Number.NaN : n * mult;
}
