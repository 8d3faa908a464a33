// An acks=all produce whose topic is deleted while it waits for the owner's
// commit is answered at once with 410 topic_deleted (JSON), not after the
// full acks=all wait with a misleading 503 commit_timeout. Real broker
// process; the wait is made long (60 s) so a timeout answer cannot pass.
//
// To keep the records uncommitted until the delete, a plain file sits where
// the topic's directory would go (as topic-identity.test.ts): the
// dispatcher's commits fail (ENOTDIR) and back off; DELETE removes it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, readAll, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

describe("acks=all and a topic deleted during the wait (real process)", () => {
  let broker: RunningNarad | undefined;
  afterAll(async () => {
    await broker?.stop();
  });

  it("answers 410 topic_deleted promptly; a namesake created after it gets nothing", async () => {
    broker = await startNarad({ env: { NARAD_ACKS_ALL_TIMEOUT_MS: "60000" } });
    const url = broker.url;
    await createTopic(url, "t", 2);
    writeFileSync(join(broker.dataDir, "topics", "t"), "not a directory\n");

    const started = Date.now();
    const pending = fetch(`${url}/v1/topics/t/produce-batch?acks=all`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: ['{"partition":0,"payload":{"a":1}}', '{"partition":1,"payload":{"a":2}}'].join("\n"),
    });
    // The request is in the commit wait once its records are in the WAL.
    await waitFor("the records in the WAL", 10_000, async () => {
      const st = (await (await fetch(`${url}/admin/v1/status`)).json()) as {
        wal: { pendingRecords: number };
      };
      return st.wal.pendingRecords >= 2 ? true : undefined;
    });
    const del = await fetch(`${url}/v1/topics/t`, { method: "DELETE" });
    expect(del.status).toBe(204);
    const deletedAt = Date.now();

    const res = await pending;
    const answeredAt = Date.now();
    expect(res.status).toBe(410);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    const body = (await res.json()) as { code: string; error: string };
    expect(body.code).toBe("topic_deleted");
    expect(body.error).toMatch(/"t" was deleted/);
    // Prompt: well inside the dispatcher's backoff and nowhere near the 60 s wait.
    expect(answeredAt - deletedAt).toBeLessThan(5_000);
    expect(answeredAt - started).toBeLessThan(30_000);

    // The records were not committed into a namesake created right after.
    await createTopic(url, "t", 2);
    await waitFor("the WAL to drain", 60_000, async () => {
      const st = (await (await fetch(`${url}/admin/v1/status`)).json()) as {
        wal: { pendingRecords: number };
      };
      return st.wal.pendingRecords === 0 ? true : undefined;
    });
    expect(await readAll(url, "t")).toEqual([]);
  });
});
