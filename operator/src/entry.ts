// Process entry point of the operator image and of bin/narad-operator.js:
// arms packages/runtime/src/early-stop.ts before loading main.ts, whose imports take
// seconds on a busy node. Until main.ts has its own SIGTERM handler on, a
// signal exits 0 at once (nothing is leading or writing yet); without this, a
// container's PID 1 dropped it and the pod waited out its whole grace period.
import { armEarlyStop } from "../../packages/runtime/src/early-stop.ts";

armEarlyStop();
await import("./main.ts");
