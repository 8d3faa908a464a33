import type { CoreV1Event, KubernetesObject } from "@kubernetes/client-node";
import { EVENT_COMPONENT } from "../constants.ts";
import type { Clock } from "./clock.ts";

// core/v1 Events for the objects we reconcile. Repeats of the same
// (object, type, reason, message) bump the existing Event's count instead of
// creating another, as kubelet and client-go's recorder do, so a reconcile
// that retries every few seconds does not flood the namespace. The memory of
// recent Events is bounded (LRU); a forgotten or expired one is re-created.

export type EventType = "Normal" | "Warning";

export interface EventSink {
  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event>;
  patchEventCount(namespace: string, name: string, count: number, lastTimestamp: Date): Promise<void>;
}

export interface Recorder {
  record(obj: KubernetesObject, type: EventType, reason: string, message: string): void;
}

interface Seen {
  name: string;
  namespace: string;
  count: number;
}

export class EventRecorder implements Recorder {
  readonly #sink: () => EventSink | undefined;
  readonly #clock: Clock;
  readonly #max: number;
  readonly #onError: (err: unknown, reason: string) => void;
  readonly #seen = new Map<string, Seen>();
  #chain: Promise<void> = Promise.resolve();
  #seq = 0;

  /** sink() may return undefined (e.g. not leading): the Event is then dropped. */
  constructor(opts: {
    sink: () => EventSink | undefined;
    clock: Clock;
    maxEntries: number;
    onError: (err: unknown, reason: string) => void;
  }) {
    this.#sink = opts.sink;
    this.#clock = opts.clock;
    this.#max = opts.maxEntries;
    this.#onError = opts.onError;
  }

  record(obj: KubernetesObject, type: EventType, reason: string, message: string): void {
    // Decided now: an Event from a reconcile that ran while leading is
    // written; nothing is recorded while not leading.
    const sink = this.#sink();
    if (sink === undefined) return;
    // Serialised so a burst for one key cannot race two creates.
    this.#chain = this.#chain.then(() => this.#record(sink, obj, type, reason, message));
  }

  /** Resolves when every Event recorded so far has been written (tests, shutdown). */
  flush(): Promise<void> {
    return this.#chain;
  }

  async #record(
    sink: EventSink,
    obj: KubernetesObject,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const meta = obj.metadata;
    if (meta?.name === undefined) return;
    const namespace = meta.namespace ?? "default";
    const key = `${meta.uid ?? `${namespace}/${meta.name}`}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = new Date(this.#clock.now());
    const seen = this.#seen.get(key);
    try {
      if (seen !== undefined) {
        seen.count++;
        this.#touch(key, seen);
        try {
          await sink.patchEventCount(seen.namespace, seen.name, seen.count, now);
          return;
        } catch {
          // expired (Events have a TTL) or deleted: create a fresh one below
          this.#seen.delete(key);
        }
      }
      const name = `${meta.name}.${now.getTime().toString(16)}${(this.#seq++ % 4096).toString(16).padStart(3, "0")}`;
      const event: CoreV1Event = {
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: meta.name,
          namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: EVENT_COMPONENT },
        reportingComponent: EVENT_COMPONENT,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      await sink.createEvent(namespace, event);
      this.#touch(key, { name, namespace, count: 1 });
    } catch (err) {
      this.#onError(err, reason);
    }
  }

  #touch(key: string, seen: Seen): void {
    this.#seen.delete(key);
    this.#seen.set(key, seen);
    while (this.#seen.size > this.#max) {
      const oldest = this.#seen.keys().next().value;
      if (oldest === undefined) break;
      this.#seen.delete(oldest);
    }
  }
}

/** A recorder that keeps Events in memory (controller tests). */
export class MemoryRecorder implements Recorder {
  readonly events: Array<{ name: string; type: EventType; reason: string; message: string }> = [];
  record(obj: KubernetesObject, type: EventType, reason: string, message: string): void {
    this.events.push({ name: obj.metadata?.name ?? "", type, reason, message });
  }
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}
