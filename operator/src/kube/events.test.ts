import type { CoreV1Event } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { EventRecorder, type EventSink } from "./events.ts";
import { ManualClock } from "./manual-clock.ts";

function sink() {
  const created: CoreV1Event[] = [];
  const patched: Array<{ name: string; count: number }> = [];
  let failPatch = false;
  const s: EventSink = {
    createEvent: async (_ns, ev) => {
      created.push(ev);
      return ev;
    },
    patchEventCount: async (_ns, name, count) => {
      if (failPatch) throw new Error("404");
      patched.push({ name, count });
    },
  };
  return { s, created, patched, setFailPatch: (v: boolean) => (failPatch = v) };
}

const obj = {
  apiVersion: "narad.dev/v1alpha1",
  kind: "NaradCluster",
  metadata: { name: "demo", namespace: "ns", uid: "u1" },
};

describe("EventRecorder", () => {
  it("creates an Event, then counts repeats of the same reason+message", async () => {
    const k = sink();
    const r = new EventRecorder({
      sink: () => k.s,
      clock: new ManualClock(),
      maxEntries: 10,
      onError: () => {},
    });
    r.record(obj, "Normal", "Created", "created StatefulSet demo");
    r.record(obj, "Normal", "Created", "created StatefulSet demo");
    r.record(obj, "Normal", "Created", "created StatefulSet demo");
    r.record(obj, "Warning", "Failed", "boom");
    await r.flush();
    expect(k.created.map((e) => [e.reason, e.type, e.count])).toEqual([
      ["Created", "Normal", 1],
      ["Failed", "Warning", 1],
    ]);
    expect(k.created[0]?.involvedObject).toMatchObject({ kind: "NaradCluster", name: "demo", uid: "u1" });
    expect(k.patched.map((p) => p.count)).toEqual([2, 3]);
  });

  it("re-creates when the counted Event is gone, and forgets beyond its bound", async () => {
    const k = sink();
    const r = new EventRecorder({
      sink: () => k.s,
      clock: new ManualClock(),
      maxEntries: 1,
      onError: () => {},
    });
    r.record(obj, "Normal", "A", "a");
    r.record(obj, "Normal", "B", "b");
    r.record(obj, "Normal", "A", "a"); // A was evicted by B: new Event
    await r.flush();
    expect(k.created.map((e) => e.reason)).toEqual(["A", "B", "A"]);
    k.setFailPatch(true);
    r.record(obj, "Normal", "A", "a");
    await r.flush();
    expect(k.created.map((e) => e.reason)).toEqual(["A", "B", "A", "A"]);
  });

  it("drops Events while there is no sink (not leading)", async () => {
    const k = sink();
    let leading = false;
    const r = new EventRecorder({
      sink: () => (leading ? k.s : undefined),
      clock: new ManualClock(),
      maxEntries: 10,
      onError: () => {},
    });
    r.record(obj, "Normal", "A", "a");
    leading = true;
    r.record(obj, "Normal", "B", "b");
    await r.flush();
    expect(k.created.map((e) => e.reason)).toEqual(["B"]);
  });
});
