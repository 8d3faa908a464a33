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

/** Every request waiting on one topic incarnation: one confirmation serves them all. */
interface Group {
  key: string;
  name: string;
  uid: string;
  waiting: Set<AbortController>;
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
  /** name NUL uid → its waiting requests. */
  readonly #groups = new Map<string, Group>();
  readonly #retryMs: number;

  /** retryMs: how soon a confirmation the authority refused (or failed) is asked again while the view says gone. */
  constructor(meta: Pick<Metastore, "getTopic" | "onChange" | "confirmTopicDeleted">, retryMs = 1_000) {
    this.#meta = meta;
    this.#retryMs = retryMs;
    meta.onChange(() => {
      for (const g of this.#groups.values()) this.#check(g);
    });
  }

  /** Requests being watched. */
  get watching(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += g.waiting.size;
    return n;
  }

  /** Watches the incarnation `uid` of topic `name` until stop(); a uid-less topic is never reported. */
  watch(name: string, uid: string | undefined): DeletionWatch {
    if (uid === undefined || uid === "") return never;
    const key = `${name}\0${uid}`;
    let g = this.#groups.get(key);
    if (g === undefined) {
      g = { key, name, uid, waiting: new Set(), confirming: false };
      this.#groups.set(key, g);
    }
    const group = g;
    const controller = new AbortController();
    group.waiting.add(controller);
    // The delete may have been applied before this request started waiting.
    this.#check(group);
    return {
      signal: controller.signal,
      get deleted() {
        return controller.signal.aborted;
      },
      stop: () => {
        group.waiting.delete(controller);
        if (group.waiting.size === 0 && this.#groups.get(key) === group) this.#groups.delete(key);
      },
    };
  }

  #check(g: Group): void {
    if (g.confirming || g.waiting.size === 0) return;
    if (!incarnationGone(this.#meta.getTopic(g.name), g.uid)) return;
    g.confirming = true;
    void this.#meta
      .confirmTopicDeleted(g.name, g.uid)
      .catch(() => false)
      .then(async (confirmed) => {
        if (confirmed) {
          // Out of the map first: a request that starts watching now gets a group (and an answer) of its own.
          if (this.#groups.get(g.key) === g) this.#groups.delete(g.key);
          for (const c of g.waiting) c.abort();
          return;
        }
        // Not confirmed yet (the authority lags or is unreachable): ask again while anyone still waits.
        await new Promise((r) => setTimeout(r, this.#retryMs).unref());
        g.confirming = false;
        this.#check(g);
      });
  }
}
