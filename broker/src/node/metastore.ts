// Which metastore a node runs on: the one a test passes in, the kubernetes
// one (NaradTopic resources, NaradCluster membership) or the data dir's file.

import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { openFileMetastore } from "../meta/file-metastore.ts";
import { loadKubeConfig, openKubeMetastore } from "../meta/kube-metastore.ts";
import type { Metastore } from "../meta/types.ts";

export async function openNodeMetastore(
  config: Config,
  logger: Logger,
  override: Metastore | undefined,
): Promise<Metastore> {
  if (override !== undefined) return override;
  return config.metastore === "kubernetes"
    ? await openKubeMetastore({
        kubeConfig: loadKubeConfig(),
        namespace: config.namespace,
        clusterName: config.clusterName,
        logger: logger.child({ component: "metastore" }),
      })
    : await openFileMetastore({
        dataDir: config.dataDir,
        nodeId: config.nodeId,
        address: `${config.http.host}:${config.http.port}`,
      });
}
