// One broker process of a local benchmark cluster (local-cluster.ts): its
// spec is the JSON in argv[2].

import { type ChildSpec, serveChild } from "./local-cluster.ts";

serveChild(JSON.parse(process.argv[2] ?? "{}") as ChildSpec).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
