// Free TCP ports on loopback for control-plane components. Several control
// planes may start side by side, so all ports of one instance are reserved
// together: every listener stays open until the whole set is known, which
// keeps the kernel from handing the same ephemeral port out twice.
import { createServer, type Server } from "node:net";

export const LOOPBACK = "127.0.0.1";

function listenEphemeral(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => resolve(server));
  });
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("listener has no TCP address");
  return address.port;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Returns `count` distinct ports that were free on `host` a moment ago. */
export async function freePorts(count: number, host: string = LOOPBACK): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) servers.push(await listenEphemeral(host));
    return servers.map(portOf);
  } finally {
    await Promise.all(servers.map(close));
  }
}

export async function freePort(host: string = LOOPBACK): Promise<number> {
  const [port] = await freePorts(1, host);
  return port!;
}
