// Minimal HTTP helpers for integration tests, speaking the /v1 API.

export async function createTopic(url: string, name: string, partitions: number): Promise<void> {
  const res = await fetch(`${url}/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, partitions }),
  });
  if (res.status !== 201) throw new Error(`create topic ${name}: ${res.status} ${await res.text()}`);
}

export interface Message {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  payload: unknown;
}

export async function partitionCount(url: string, topic: string): Promise<number> {
  const info = (await (await fetch(`${url}/v1/topics/${topic}`)).json()) as { partitions: number };
  return info.partitions;
}

export async function highWatermarks(url: string, topic: string): Promise<number[]> {
  const info = (await (await fetch(`${url}/v1/topics/${topic}`)).json()) as {
    partition_stats: Array<{ high_watermark: number }>;
  };
  return info.partition_stats.map((p) => p.high_watermark);
}

/** Every visible record of a topic, read with the bulk route. */
export async function readAll(url: string, topic: string): Promise<Message[]> {
  const out: Message[] = [];
  const partitions = await partitionCount(url, topic);
  for (let p = 0; p < partitions; p++) {
    let offset = 0;
    for (;;) {
      const res = await fetch(`${url}/v1/topics/${topic}/records?partition=${p}&offset=${offset}&limit=1000`);
      if (res.status !== 200)
        throw new Error(`read ${topic}/${p}@${offset}: ${res.status} ${await res.text()}`);
      const page = (await res.json()) as { records: Message[]; next_offset: number; high_watermark: number };
      out.push(...page.records);
      if (page.records.length === 0 || page.next_offset >= page.high_watermark) break;
      offset = page.next_offset;
    }
  }
  return out;
}

export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}
