// One setting governs every body: a broker started with --max-body-bytes
// refuses a larger body on a route without a limit of its own (topic create
// and patch) with 413 and the usual JSON error, as it does a produce. The
// refusal stores and changes nothing: earlier records stay readable, the
// broker keeps serving, and a restart finds the same data.

import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, readAll, waitFor } from "./harness/client.ts";
import { startNarad } from "./harness/process.ts";

const limit = 4096;
const json = { "content-type": "application/json" };

/** A valid JSON body of exactly `bytes` bytes: the object, padded with whitespace. */
function paddedJson(value: object, bytes: number): string {
  const s = JSON.stringify(value);
  if (s.length > bytes) throw new Error("body larger than asked");
  return s + " ".repeat(bytes - s.length);
}

async function expect413(res: Response): Promise<void> {
  expect(res.status).toBe(413);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: unknown; code: unknown };
  expect(body.code).toBe("payload_too_large");
  expect(typeof body.error).toBe("string");
  expect(String(body.error).length).toBeGreaterThan(0);
}

async function produce(url: string, key: string, body: string): Promise<Response> {
  return fetch(`${url}/v1/topics/t/produce?partition=0&key=${key}`, { method: "POST", body });
}

async function readUntil(url: string, n: number) {
  return waitFor(`${n} records`, 10_000, async () => {
    const all = await readAll(url, "t");
    return all.length >= n ? all : undefined;
  });
}

describe("--max-body-bytes governs every route's body", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("413 with a JSON error above it on topics and produce; nothing stored or changed", async () => {
    const args = ["--max-body-bytes", String(limit)];
    const broker = await startNarad({ keepData: true, args });
    dirs.push(broker.dataDir);
    try {
      await createTopic(broker.url, "t", 1);
      for (const key of ["k0", "k1", "k2"])
        expect((await produce(broker.url, key, `m-${key}`)).status).toBe(202);
      await readUntil(broker.url, 3);

      // At the limit a topic create is accepted (the old fixed 1 MiB would accept far more too)…
      const atLimit = await fetch(`${broker.url}/v1/topics`, {
        method: "POST",
        headers: json,
        body: paddedJson({ name: "fits", partitions: 1 }, limit),
      });
      expect(atLimit.status).toBe(201);
      // …one byte above it is 413, and no topic is created.
      await expect413(
        await fetch(`${broker.url}/v1/topics`, {
          method: "POST",
          headers: json,
          body: paddedJson({ name: "too-big", partitions: 1 }, limit + 1),
        }),
      );
      expect((await fetch(`${broker.url}/v1/topics/too-big`)).status).toBe(404);
      // A patch above it changes nothing.
      await expect413(
        await fetch(`${broker.url}/v1/topics/t`, {
          method: "PATCH",
          headers: json,
          body: paddedJson({ partitions: 2 }, limit + 1),
        }),
      );
      const topic = (await (await fetch(`${broker.url}/v1/topics/t`)).json()) as { partitions: number };
      expect(topic.partitions).toBe(1);
      // A produce above it is refused the same way and stores nothing.
      await expect413(await produce(broker.url, "big", "x".repeat(limit + 1)));

      // Still serving: the earlier records are there, a new produce lands after them.
      expect((await produce(broker.url, "k3", "m-k3")).status).toBe(202);
      const after = await readUntil(broker.url, 4);
      expect(after.map((r) => [r.offset, r.key])).toEqual([
        [0, "k0"],
        [1, "k1"],
        [2, "k2"],
        [3, "k3"],
      ]);
      await broker.stop();

      // A restart on the same data dir finds exactly those records.
      const again = await startNarad({ dataDir: broker.dataDir, keepData: true, args });
      try {
        const recovered = await readUntil(again.url, 4);
        expect(recovered.map((r) => [r.offset, r.key])).toEqual(after.map((r) => [r.offset, r.key]));
      } finally {
        await again.stop();
      }
    } finally {
      await broker.stop();
    }
  }, 60_000);
});
