// The acks=all deletion watch: reports a topic incarnation's deletion only
// once the authority confirms it, not on the local view alone; a namesake
// with another uid does not keep the watched incarnation alive; uid-less
// topics are never reported (their records follow the name).

import { describe, expect, it } from "vitest";
import type { TopicConfig } from "../meta/types.ts";
import { acksAllAnswer } from "./produce-acks.ts";
import { incarnationGone, TopicDeletionWatch } from "./topic-deletion-watch.ts";

function fakeMeta() {
  const topics = new Map<string, TopicConfig>();
  const listeners: Array<() => void> = [];
  let authorityConfirms = true;
  let asked = 0;
  return {
    topics,
    setAuthority(v: boolean) {
      authorityConfirms = v;
    },
    get asked() {
      return asked;
    },
    changed() {
      for (const l of listeners) l();
    },
    meta: {
      getTopic: (n: string) => topics.get(n),
      onChange: (l: () => void) => {
        listeners.push(l);
      },
      confirmTopicDeleted: async () => {
        asked++;
        return authorityConfirms;
      },
    },
  };
}

const topic = (uid: string) => ({ name: "t", uid, partitions: 1 }) as TopicConfig;

async function until(cond: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("incarnationGone", () => {
  it("is gone when absent or replaced by another uid", () => {
    expect(incarnationGone(undefined, "u1")).toBe(true);
    expect(incarnationGone(topic("u2"), "u1")).toBe(true);
    expect(incarnationGone(topic("u1"), "u1")).toBe(false);
  });
});

describe("TopicDeletionWatch", () => {
  it("fires once the authority confirms, and asks again while it does not", async () => {
    const f = fakeMeta();
    f.topics.set("t", topic("u1"));
    const watch = new TopicDeletionWatch(f.meta, 20);
    const w = watch.watch("t", "u1");
    expect(w.deleted).toBe(false);
    f.setAuthority(false);
    f.topics.delete("t");
    f.changed();
    await until(() => f.asked >= 2);
    expect(w.deleted).toBe(false);
    f.setAuthority(true);
    await until(() => w.deleted);
    expect(w.signal.aborted).toBe(true);
    w.stop();
    expect(watch.watching).toBe(0);
  });

  it("fires for a re-created namesake, at once for a delete applied before the watch", async () => {
    const f = fakeMeta();
    f.topics.set("t", topic("u2"));
    const watch = new TopicDeletionWatch(f.meta, 20);
    const w = watch.watch("t", "u1");
    await until(() => w.deleted);
    w.stop();
    const live = watch.watch("t", "u2");
    f.changed();
    await new Promise((r) => setTimeout(r, 30));
    expect(live.deleted).toBe(false);
    live.stop();
  });

  it("asks the authority once for many requests waiting on one incarnation", async () => {
    const f = fakeMeta();
    f.topics.set("t", topic("u1"));
    const watch = new TopicDeletionWatch(f.meta, 20);
    const ws = Array.from({ length: 50 }, () => watch.watch("t", "u1"));
    expect(watch.watching).toBe(50);
    f.topics.delete("t");
    f.changed();
    f.changed();
    await until(() => ws.every((w) => w.deleted));
    expect(f.asked).toBe(1);
    for (const w of ws) w.stop();
    expect(watch.watching).toBe(0);
  });

  it("never reports a uid-less topic", () => {
    const f = fakeMeta();
    const watch = new TopicDeletionWatch(f.meta, 20);
    const w = watch.watch("t", undefined);
    f.changed();
    expect(w.deleted).toBe(false);
    expect(watch.watching).toBe(0);
    expect(f.asked).toBe(0);
  });
});

describe("acksAllAnswer with a deleted topic", () => {
  it("answers 410 for missing records, still 409 for refused ones, 200 when all committed", () => {
    expect(acksAllAnswer([0, 1], [5, undefined], false, 15_000, { topic: "t" })).toMatchObject({
      status: 410,
      code: "topic_deleted",
    });
    expect(acksAllAnswer([0, 1], [-2, undefined], false, 15_000, { topic: "t" })).toMatchObject({
      status: 409,
    });
    expect(acksAllAnswer([0, 1], [5, 6], false, 15_000, { topic: "t" })).toMatchObject({ status: 200 });
    expect(acksAllAnswer([0], [undefined], false, 15_000)).toMatchObject({ status: 503 });
  });
});
