// Process entry point of the image and of bin/narad.js: arms early-stop.ts
// for `serve` before loading main.ts, whose static imports alone take a
// second or more on a busy node (a signal then would be lost, see early-stop.ts).
import { armEarlyStop } from "../../packages/runtime/src/early-stop.ts";

if (process.argv[2] === "serve") armEarlyStop();
const { runNarad } = await import("./main.ts");
await runNarad(process.argv.slice(2));
