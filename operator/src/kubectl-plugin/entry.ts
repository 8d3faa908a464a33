// Process entry of `kubectl narad` (bin/kubectl-narad.js).
import { once } from "node:events";
import { runPlugin } from "./main.ts";

const code = await runPlugin(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  now: () => new Date(),
  interrupted: () => Promise.race([once(process, "SIGINT"), once(process, "SIGTERM")]).then(() => undefined),
});
// Exit now: an open port-forward's sockets would otherwise keep the process up.
process.exit(code);
