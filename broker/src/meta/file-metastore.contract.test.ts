// The file backend through the shared Metastore contract.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeMetastoreContract } from "./contract.ts";
import { openFileMetastore } from "./file-metastore.ts";

describeMetastoreContract("file", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "narad-meta-contract-"));
  return {
    open: () => openFileMetastore({ dataDir, nodeId: "node-0", address: "127.0.0.1:7942" }),
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
  };
});
