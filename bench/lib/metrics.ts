// Reads counters from a broker's /metrics so a benchmark can report ratios
// such as fsyncs per acknowledged message over exactly its own window.

export async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const values = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const space = line.lastIndexOf(" ");
    const name = line.slice(0, space);
    const value = Number(line.slice(space + 1));
    // Sum series across labels under the bare metric name as well.
    const bare = name.split("{")[0] as string;
    values.set(name, value);
    if (bare !== name) values.set(bare, (values.get(bare) ?? 0) + value);
  }
  return values;
}

export function delta(before: Map<string, number>, after: Map<string, number>, name: string): number {
  return (after.get(name) ?? 0) - (before.get(name) ?? 0);
}
