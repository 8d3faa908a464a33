// The cluster shared secret, read from a file (a Secret volume) and
// re-read when it changes. Peers never send the secret itself: every cluster
// RPC carries hex HMAC-SHA256(secret, "narad-cluster-auth-v1") in the
// narad-cluster-auth metadata. Over HTTP the secret itself is accepted as an
// admin bearer token (the operator's calls to /admin/v1).

import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { sha256 } from "./users-file.ts";
import { watchFile } from "./watched-file.ts";

export const clusterAuthMetadataKey = "narad-cluster-auth";
const hmacContext = "narad-cluster-auth-v1";

export interface ClusterSecret {
  /** The metadata value peers send and the server expects. */
  rpcToken(): string;
  /** sha256 of the secret, compared with a bearer token's digest. */
  bearerDigest(): Buffer;
  close(): void;
}

export function clusterRpcToken(secret: string): string {
  return createHmac("sha256", secret).update(hmacContext).digest("hex");
}

function parseSecret(content: Buffer, path: string): string {
  const secret = content.toString("utf8").trim();
  if (secret.length < 16) throw new Error(`cluster secret file ${path} must hold at least 16 characters`);
  return secret;
}

export async function openClusterSecret(
  path: string,
  logger: { info(obj: object, msg: string): void; error(obj: object, msg: string): void },
  pollMs: number,
): Promise<ClusterSecret> {
  const initial = await readFile(path);
  let secret = parseSecret(initial, path);
  let token = clusterRpcToken(secret);
  let digest = sha256(secret);
  const watcher = watchFile(
    path,
    pollMs,
    (content) => {
      try {
        secret = parseSecret(content, path);
        token = clusterRpcToken(secret);
        digest = sha256(secret);
        logger.info({ path }, "cluster secret reloaded");
      } catch (err) {
        logger.error({ err, path }, "cluster secret file invalid; keeping the previous secret");
      }
    },
    (err) => logger.error({ err, path }, "cannot read the cluster secret file; keeping the previous secret"),
    initial,
  );
  return { rpcToken: () => token, bearerDigest: () => digest, close: () => watcher.close() };
}
