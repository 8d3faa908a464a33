import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { NodeZones } from "../controller/deps.ts";
import { httpStatus } from "./api.ts";
import type { Clock } from "./clock.ts";

// The `topology.kubernetes.io/zone` label of the nodes broker pods run on,
// for spreading a partition's replicas across zones (plan/replica-placement.ts).
// A GET per node, cached: zones do not change under a running node. A node
// that cannot be read (gone, or the operator may not get nodes) has no zone:
// placement then spreads over brokers only.

export const ZONE_LABEL = "topology.kubernetes.io/zone";

export class CachedNodeZones implements NodeZones {
  readonly #read: (name: string) => Promise<Record<string, string> | undefined>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { zone: string | undefined; atMs: number }>();

  /** read: a node's labels, undefined when it does not exist. */
  constructor(
    read: (name: string) => Promise<Record<string, string> | undefined>,
    clock: Clock,
    ttlMs: number,
  ) {
    this.#read = read;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  async zoneOf(nodeName: string): Promise<string | undefined> {
    const now = this.#clock.now();
    const hit = this.#cache.get(nodeName);
    if (hit !== undefined && now - hit.atMs < this.#ttlMs) return hit.zone;
    let zone: string | undefined;
    try {
      const labels = await this.#read(nodeName);
      zone = labels?.[ZONE_LABEL] || undefined;
    } catch (err) {
      // Remembered like a node without the label, so a refusal (403) is not
      // asked again on every reconcile.
      zone = undefined;
      this.#cache.set(nodeName, { zone, atMs: now });
      throw err;
    }
    this.#cache.set(nodeName, { zone, atMs: now });
    return zone;
  }
}

/** Reads nodes through client-node. */
export function clientNodeZones(kc: KubeConfig, clock: Clock, ttlMs: number): CachedNodeZones {
  const core = kc.makeApiClient(CoreV1Api);
  return new CachedNodeZones(
    async (name) => {
      try {
        return (await core.readNode({ name })).metadata?.labels ?? {};
      } catch (err) {
        if (httpStatus(err) === 404) return undefined;
        throw err;
      }
    },
    clock,
    ttlMs,
  );
}
