// A mesh of TCP links between test nodes: one proxy per (from, to) pair, so
// a test can cut exactly the traffic to and from one node. A cut link
// blackholes: its open connections stay open and go silent (bytes read and
// dropped, nothing forwarded) and new connections are accepted and ignored,
// as under a real network partition; a heal closes the silent connections so
// clients reconnect through a working link.

import { connect, createServer, type Server, type Socket } from "node:net";

class Link {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<[Socket, Socket]>();
  readonly #silent = new Set<Socket>();
  #cut = false;
  address = "";

  constructor(target: string) {
    const i = target.lastIndexOf(":");
    this.#target = { host: target.slice(0, i) || "127.0.0.1", port: Number(target.slice(i + 1)) };
    this.#server = createServer((client) => this.#accept(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    const a = this.#server.address();
    if (a === null || typeof a === "string") throw new Error("link: no address");
    this.address = `127.0.0.1:${a.port}`;
  }

  #silence(client: Socket): void {
    client.removeAllListeners("data");
    client.on("data", () => undefined);
    client.on("error", () => undefined);
    this.#silent.add(client);
    client.once("close", () => this.#silent.delete(client));
  }

  #accept(client: Socket): void {
    if (this.#cut) {
      this.#silence(client);
      return;
    }
    const upstream = connect(this.#target);
    const pair: [Socket, Socket] = [client, upstream];
    this.#pairs.add(pair);
    const drop = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  cut(): void {
    this.#cut = true;
    for (const pair of this.#pairs) {
      const [client, upstream] = pair;
      this.#pairs.delete(pair);
      client.unpipe(upstream);
      upstream.unpipe(client);
      upstream.removeAllListeners("close");
      upstream.removeAllListeners("error");
      upstream.on("error", () => undefined);
      upstream.destroy();
      client.removeAllListeners("close");
      client.removeAllListeners("error");
      this.#silence(client);
    }
  }

  heal(): void {
    this.#cut = false;
    for (const s of this.#silent) s.destroy();
    this.#silent.clear();
  }

  async close(): Promise<void> {
    this.cut();
    this.heal();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export class LinkMesh {
  readonly #links = new Map<string, Link>();

  /** Creates the link from → to, forwarding to `target` (host:port). */
  async link(from: string, to: string, target: string): Promise<string> {
    const l = new Link(target);
    await l.listen();
    this.#links.set(`${from}>${to}`, l);
    return l.address;
  }

  /** The address `from` should dial to reach `to`, if a link exists. */
  address(from: string, to: string): string | undefined {
    return this.#links.get(`${from}>${to}`)?.address;
  }

  #touching(node: string): Link[] {
    return [...this.#links]
      .filter(([k]) => k.startsWith(`${node}>`) || k.endsWith(`>${node}`))
      .map(([, l]) => l);
  }

  /** Cuts every link to and from `node`. */
  isolate(node: string): void {
    for (const l of this.#touching(node)) l.cut();
  }

  heal(node: string): void {
    for (const l of this.#touching(node)) l.heal();
  }

  async close(): Promise<void> {
    await Promise.all([...this.#links.values()].map((l) => l.close()));
    this.#links.clear();
  }
}
