import type { Informer, KubernetesObject, ObjectCache } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type InformerEvent, ResilientInformer } from "./informer.ts";
import { ManualClock, settle } from "./manual-clock.ts";

type Cb = (arg: never) => void;

/** A ListWatch stand-in: start() fails (fires error, like a failed list) while `failing` is set. */
class FakeInformer implements Informer<KubernetesObject>, ObjectCache<KubernetesObject> {
  failing = 0;
  starts = 0;
  readonly callbacks = new Map<string, Cb[]>();
  readonly objects: KubernetesObject[] = [];
  on(verb: string, cb: Cb): void {
    this.callbacks.set(verb, [...(this.callbacks.get(verb) ?? []), cb]);
  }
  off(): void {}
  fire(verb: string, arg: unknown): void {
    for (const cb of this.callbacks.get(verb) ?? []) (cb as (a: unknown) => void)(arg);
  }
  async start(): Promise<void> {
    this.starts++;
    if (this.failing > 0) {
      this.failing--;
      this.fire("error", new Error("list failed: 403"));
    }
  }
  async stop(): Promise<void> {}
  get(name: string): KubernetesObject | undefined {
    return this.objects.find((o) => o.metadata?.name === name);
  }
  list(): ReadonlyArray<KubernetesObject> {
    return this.objects;
  }
}

describe("ResilientInformer", () => {
  it("restarts after errors with backoff, then reports synced and events", async () => {
    const clock = new ManualClock();
    const fake = new FakeInformer();
    fake.failing = 3;
    const events: InformerEvent<KubernetesObject>[] = [];
    const inf = new ResilientInformer({
      name: "pods",
      informer: fake,
      clock,
      restartBaseMs: 500,
      restartMaxMs: 30_000,
      onEvent: (e) => events.push(e),
    });
    inf.start();
    await settle();
    expect(fake.starts).toBe(1);
    expect(inf.synced).toBe(false);
    await clock.advance(500);
    expect(fake.starts).toBe(2);
    await clock.advance(999);
    expect(fake.starts).toBe(2);
    await clock.advance(1);
    expect(fake.starts).toBe(3);
    await clock.advance(2000);
    expect(fake.starts).toBe(4);
    expect(inf.synced).toBe(true);
    expect(events.map((e) => (e.type === "error" ? `error:${e.restartInMs}` : e.type))).toEqual([
      "error:500",
      "error:1000",
      "error:2000",
      "synced",
    ]);

    // a watch error after sync: restart again from the base delay, stay synced
    fake.fire("error", new Error("watch: connection reset"));
    expect(events.at(-1)).toMatchObject({ type: "error", restartInMs: 500 });
    await clock.advance(500);
    expect(fake.starts).toBe(5);
    expect(inf.synced).toBe(true);

    fake.fire("add", { metadata: { name: "x" } });
    expect(events.at(-1)).toEqual({ type: "add", object: { metadata: { name: "x" } } });
  });

  it("does not restart once stopped", async () => {
    const clock = new ManualClock();
    const fake = new FakeInformer();
    const inf = new ResilientInformer({
      name: "x",
      informer: fake,
      clock,
      restartBaseMs: 500,
      restartMaxMs: 30_000,
      onEvent: () => {},
    });
    inf.start();
    await settle();
    fake.fire("error", new Error("boom"));
    await inf.stop();
    await clock.advance(10_000);
    expect(fake.starts).toBe(1);
  });

  it("reports health: unhealthy from a watch error until a restart succeeds, then when it recovered (issue #21 item 8)", async () => {
    const clock = new ManualClock(1_000_000);
    const fake = new FakeInformer();
    const inf = new ResilientInformer({
      name: "pods",
      informer: fake,
      clock,
      restartBaseMs: 500,
      restartMaxMs: 30_000,
      onEvent: () => {},
    });
    inf.start();
    await settle();
    expect(inf.health).toEqual({ name: "pods", healthy: true, recoveredAtMs: undefined });
    // The API server goes away: synced stays true (the cache is kept), health does not.
    fake.failing = 1;
    fake.fire("error", new Error("watch: connection refused"));
    expect(inf.synced).toBe(true);
    expect(inf.health.healthy).toBe(false);
    await clock.advance(500); // restart fails
    expect(inf.health.healthy).toBe(false);
    await clock.advance(1000); // restart succeeds
    expect(inf.health).toEqual({ name: "pods", healthy: true, recoveredAtMs: 1_001_500 });
  });
});
