// Optional mutual TLS on the cluster RPC from a directory holding ca.crt,
// tls.crt and tls.key (a Secret volume). grpc-js's file-watcher certificate
// provider re-reads the files by path every refresh interval, so renewed
// certificates apply to new connections without a restart. Both sides must
// present a certificate signed by the CA. Peers are dialled by pod address,
// so the server certificate's names are not checked against it: the CA is
// the trust boundary (a certificate from it is a cluster member).

import { join } from "node:path";
import { type ChannelCredentials, experimental, type ServerCredentials } from "@grpc/grpc-js";

export interface ClusterTls {
  server: ServerCredentials;
  channel: ChannelCredentials;
}

export function clusterTlsCredentials(dir: string, refreshMs: number): ClusterTls {
  const provider = new experimental.FileWatcherCertificateProvider({
    caCertificateFile: join(dir, "ca.crt"),
    certificateFile: join(dir, "tls.crt"),
    privateKeyFile: join(dir, "tls.key"),
    refreshIntervalMs: refreshMs,
  });
  return {
    server: experimental.createCertificateProviderServerCredentials(provider, provider, true),
    channel: experimental.createCertificateProviderChannelCredentials(provider, provider, {
      checkServerIdentity: () => undefined,
    }),
  };
}
