// The kubelet's port-forward (`kubectl port-forward`, `kubectl narad
// port-forward`) connects to localhost inside the pod's network namespace. A
// broker in a pod listens on its pod IP only (the operator passes
// --addr=$(POD_IP):7942, which the local test platform needs: its pods share
// one network namespace), so that connection found nothing. With
// --loopback-forward on, the broker also accepts TCP on 127.0.0.1:<HTTP port>
// and pipes each connection, bytes unchanged (TLS included), to its HTTP
// listener.

import { connect, createServer, type Socket } from "node:net";
import type { Logger } from "pino";

export interface LoopbackForward {
  /** Stops accepting and cuts the forwarded connections (the HTTP server closes its own side). */
  close(): Promise<void>;
}

/**
 * Whether a listener on `host` needs the forward. Not for a wildcard or
 * localhost (already reachable on 127.0.0.1), nor for any 127.x address: that
 * is a pod IP of the local test platform, whose pods share one network
 * namespace (they would contend for 127.0.0.1) and which has no kubelet to
 * port-forward through.
 */
export function needsLoopbackForward(host: string): boolean {
  return !(
    host === "0.0.0.0" ||
    host === "::" ||
    host === "" ||
    host === "localhost" ||
    host.startsWith("127.")
  );
}

/**
 * Starts the forward from listenHost:port (127.0.0.1) to the HTTP listener at
 * host:port. Undefined, logged, when that port is taken: the broker still
 * serves on its own address.
 */
export async function startLoopbackForward(
  target: { host: string; port: number },
  logger: Logger,
  listenHost = "127.0.0.1",
): Promise<LoopbackForward | undefined> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host: target.host, port: target.port });
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(target.port, listenHost, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    logger.warn(
      { err, port: target.port },
      `loopback forward not started (${listenHost}:${target.port} taken): port-forward through the kubelet will not reach this broker`,
    );
    return undefined;
  }
  logger.info(
    { from: `${listenHost}:${target.port}`, to: `${target.host}:${target.port}` },
    "loopback forward listening",
  );
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      }),
  };
}
