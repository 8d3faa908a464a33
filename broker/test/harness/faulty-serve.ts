// `narad` with the ingress WAL's file I/O behind the test fault seam
// (fault-seam.ts, driven by the control file NARAD_TEST_FAULTS names):
// startNarad({ faults }) runs this instead of broker/src/main.ts, so the
// broker's own code and its image carry no fault injection.

import { runNarad } from "../../src/main.ts";
import { withTestFaults } from "./fault-seam.ts";

await runNarad(process.argv.slice(2), {
  walIo: (io) => withTestFaults(io, process.env.NARAD_TEST_FAULTS),
});
