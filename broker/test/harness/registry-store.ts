// A producer-registry store for in-process cluster tests whose watch can be
// held back (a broker whose ConfigMap watch has not delivered a bump made
// through another broker yet, or has stopped altogether) and whose reads can
// be made to fail (the API server unreachable from this broker). Writes and
// reads go to the shared inner store (memoryRegistryStore()), so every
// broker shares one durable state; only this broker's watched copy (peek)
// lags.

import type { RegistryStore } from "../../src/producers/registry.ts";
import type { RegistryState } from "../../src/producers/registry-state.ts";

export interface LaggingRegistryStore extends RegistryStore {
  /** From now on peek() answers the state as it is now, until release(). */
  holdWatch(): void;
  /** peek() follows the inner store again (the held events are delivered). */
  releaseWatch(): void;
  /** While true, load() (and save()) fail as an unreachable API server would. */
  failReads(on: boolean): void;
  /** load() calls so far (reads of the store, as the API server would count GETs). */
  loads(): number;
}

export function laggingRegistryStore(inner: RegistryStore): LaggingRegistryStore {
  let held: RegistryState | undefined;
  let failing = false;
  let loads = 0;
  const unreachable = () => new Error("test: the producer registry store is unreachable");
  return {
    load: async () => {
      loads++;
      if (failing) throw unreachable();
      return inner.load();
    },
    save: async (state, rev) => {
      if (failing) throw unreachable();
      return inner.save(state, rev);
    },
    peek: () => held ?? inner.peek?.() ?? (undefined as unknown as RegistryState),
    holdWatch() {
      held = inner.peek?.();
    },
    releaseWatch() {
      held = undefined;
    },
    failReads(on) {
      failing = on;
    },
    loads: () => loads,
  };
}
