// Issue #13 item 1 against the real broker process: records accepted for a
// topic T that is deleted and created again (with fewer partitions) before
// they were dispatched must never appear in the new T, must not pin the WAL
// checkpoint, and a kill -9 + restart must not change that. Every record
// acknowledged (202) for the other topic U must be visible.
//
// To keep T's records undispatched until the re-create, the test puts a
// plain file where T's directory would go: the dispatcher's commits to T
// fail (ENOTDIR) and back off; DELETE removes the file with the topic.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, readAll, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

async function produce(url: string, topic: string, partition: number, body: string): Promise<number> {
  const res = await fetch(`${url}/v1/topics/${topic}/produce?partition=${partition}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

async function walPending(url: string): Promise<number> {
  const st = (await (await fetch(`${url}/admin/v1/status`)).json()) as { wal: { pendingRecords: number } };
  return st.wal.pendingRecords;
}

describe("topic identity across delete and re-create (real process, kill -9)", () => {
  let broker: RunningNarad | undefined;
  let dataDir: string | undefined;
  afterAll(async () => {
    await broker?.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  it("never commits the old incarnation's records into the namesake", async () => {
    broker = await startNarad({ keepData: true });
    dataDir = broker.dataDir;
    const url = broker.url;
    await createTopic(url, "t", 4);
    writeFileSync(join(dataDir, "topics", "t"), "not a directory\n");
    let oldAcked = 0;
    for (let p = 0; p < 4; p++)
      for (let i = 0; i < 25; i++)
        if ((await produce(url, "t", p, JSON.stringify({ old: i }))) === 202) oldAcked++;
    expect(oldAcked).toBe(100);

    // Delete and re-create back to back, well inside the dispatcher's error backoff.
    const del = await fetch(`${url}/v1/topics/t`, { method: "DELETE" });
    expect(del.status).toBe(204);
    await createTopic(url, "t", 1);
    await createTopic(url, "u", 1);
    const uAcked: number[] = [];
    for (let i = 0; i < 50; i++)
      if ((await produce(url, "u", 0, JSON.stringify({ u: i }))) === 202) uAcked.push(i);
    expect(uAcked.length).toBe(50);

    await broker.kill9();
    broker = await startNarad({ dataDir, keepData: true });
    const url2 = broker.url;
    await waitFor("the WAL to drain", 60_000, async () =>
      (await walPending(url2)) === 0 ? true : undefined,
    );
    const u = await readAll(url2, "u");
    expect(u.map((m) => (m.payload as { u: number }).u).sort((a, b) => a - b)).toEqual(uAcked);
    // Nothing was produced to the new t.
    expect(await readAll(url2, "t")).toEqual([]);
    // And the new t works.
    expect(await produce(url2, "t", 0, JSON.stringify({ fresh: 1 }))).toBe(202);
    const t = await waitFor("the new t's record", 30_000, async () => {
      const all = await readAll(url2, "t");
      return all.length > 0 ? all : undefined;
    });
    expect(t.map((m) => m.payload)).toEqual([{ fresh: 1 }]);
  });
});
