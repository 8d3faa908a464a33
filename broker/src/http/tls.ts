// HTTPS for the API listener from a kubernetes.io/tls Secret volume
// (DIR/tls.crt, DIR/tls.key). The files are polled by path and, when they
// change, validated as a pair and applied with setSecureContext: new
// connections get the new certificate, open ones keep theirs, nothing
// restarts. A bad or half-written pair keeps the previous certificate.

import { readFile } from "node:fs/promises";
import type { RequestListener } from "node:http";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { type WatchedFile, watchFile } from "../auth/watched-file.ts";

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

interface TlsLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const tlsFiles = { cert: "tls.crt", key: "tls.key" } as const;

/** Reads and checks the pair (createSecureContext throws on a mismatched key). */
export async function loadTls(dir: string): Promise<TlsMaterial> {
  const [cert, key] = await Promise.all([
    readFile(join(dir, tlsFiles.cert)),
    readFile(join(dir, tlsFiles.key)),
  ]);
  createSecureContext({ cert, key });
  return { cert, key };
}

/** A fastify serverFactory serving HTTPS; server() is the one it created (for setSecureContext). */
export function httpsServerFactory(initial: TlsMaterial): {
  factory: (handler: RequestListener) => Server;
  server: () => Server | undefined;
} {
  let created: Server | undefined;
  return {
    factory: (handler) => {
      created = createServer({ cert: initial.cert, key: initial.key }, handler);
      return created;
    },
    server: () => created,
  };
}

export function watchTls(
  dir: string,
  server: Server,
  logger: TlsLogger,
  pollMs: number,
  initial: TlsMaterial,
): { close(): void } {
  let applied = initial;
  const reload = () => {
    loadTls(dir).then(
      (next) => {
        if (next.cert.equals(applied.cert) && next.key.equals(applied.key)) return;
        server.setSecureContext({ cert: next.cert, key: next.key });
        applied = next;
        logger.info({ dir }, "TLS certificate reloaded");
      },
      // Mid-swap the two files can disagree for a poll; the next change retries.
      (err: unknown) =>
        logger.error(
          { dir, error: (err as Error).message },
          "TLS files invalid; keeping the previous certificate",
        ),
    );
  };
  const onError = (err: Error) => logger.error({ dir, error: err.message }, "cannot read a TLS file");
  const watchers: WatchedFile[] = [
    watchFile(join(dir, tlsFiles.cert), pollMs, reload, onError, initial.cert),
    watchFile(join(dir, tlsFiles.key), pollMs, reload, onError, initial.key),
  ];
  return {
    close: () => {
      for (const w of watchers) w.close();
    },
  };
}
