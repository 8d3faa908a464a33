// acks=all: tells a produce waiting for its owner's commit that the topic
// incarnation its records were accepted for has been deleted. Such records
// are never committed into a live topic (the dispatcher discards them under
// the stale-replica defense, or an owner that had not seen the delete yet
// commits them into the deleted incarnation, whose files go with it), so the
// request can be answered at once instead of timing out with a misleading
// commit_timeout.
//
// One metastore listener serves every waiting request (Metastore.onChange
// has no unsubscribe). The local view saying "gone" is only the trigger: the
// answer waits for confirmTopicDeleted (the authority's word), so a replica
// that lags or glitches never makes a client give up on records that are
// still committed. Topics without a uid (records follow the name, and a
// namesake created later would take them) are not watched: they keep the
// timeout answer, which is then the honest one.

import type { Metastore, TopicConfig } from "../meta/types.ts";

/** Pure: whether the view no longer holds the incarnation `uid` of a topic (now `current`). */
export function incarnationGone(current: TopicConfig | undefined, uid: string): boolean {
  return current === undefined || current.uid !== uid;
}

interface Watcher {
  name: string;
  uid: string;
  controller: AbortController;
  confirming: boolean;
}

export interface DeletionWatch {
  /** Aborted once the deletion of the watched incarnation is confirmed. */
  readonly signal: AbortSignal;
  readonly deleted: boolean;
  stop(): void;
}

const never: DeletionWatch = {
  signal: new AbortController().signal,
  deleted: false,
  stop() {},
};

export class TopicDeletionWatch {
  readonly #meta: Pick<Metastore, "getTopic" | "onChange" | "confirmTopicDeleted">;
  readonly #watchers = new Set<Watcher>();
  readonly #retryMs: number;

  /** retryMs: how soon a confirmation the authority refused (or failed) is asked again while the view says gone. */
  constructor(meta: Pick<Metastore, "getTopic" | "onChange" | "confirmTopicDeleted">, retryMs = 1_000) {
    this.#meta = meta;
    this.#retryMs = retryMs;
    meta.onChange(() => {
      for (const w of this.#watchers) this.#check(w);
    });
  }

  get watching(): number {
    return this.#watchers.size;
  }

  /** Watches the incarnation `uid` of topic `name` until stop(); a uid-less topic is never reported. */
  watch(name: string, uid: string | undefined): DeletionWatch {
    if (uid === undefined || uid === "") return never;
    const w: Watcher = { name, uid, controller: new AbortController(), confirming: false };
    this.#watchers.add(w);
    // The delete may have been applied before this request started waiting.
    this.#check(w);
    return {
      signal: w.controller.signal,
      get deleted() {
        return w.controller.signal.aborted;
      },
      stop: () => {
        this.#watchers.delete(w);
      },
    };
  }

  #check(w: Watcher): void {
    if (w.confirming || w.controller.signal.aborted) return;
    if (!incarnationGone(this.#meta.getTopic(w.name), w.uid)) return;
    w.confirming = true;
    this.#meta
      .confirmTopicDeleted(w.name, w.uid)
      .catch(() => false)
      .then(async (confirmed) => {
        if (confirmed) {
          w.controller.abort();
          return;
        }
        // Not confirmed yet (the authority lags or is unreachable): ask again while still waiting.
        await new Promise((r) => setTimeout(r, this.#retryMs).unref());
        w.confirming = false;
        if (this.#watchers.has(w)) this.#check(w);
      });
  }
}
