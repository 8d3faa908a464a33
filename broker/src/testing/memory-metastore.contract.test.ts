// The memory backend (in-process test clusters, the cluster benchmark)
// through the shared Metastore contract: three Active members, each open()
// a view of the same cluster state.
import { describeMetastoreContract } from "../meta/contract.ts";
import { createMemoryCluster } from "./memory-metastore.ts";

describeMetastoreContract("memory", async () => {
  const mc = createMemoryCluster(
    ["m-0", "m-1", "m-2"].map((id, i) => ({ id, address: `127.0.0.1:${7942 + 2 * i}`, state: "Active" })),
  );
  return { open: async () => mc.metastore(), cleanup: async () => {} };
});
