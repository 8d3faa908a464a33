// SIGTERM/SIGINT before the broker is ready: exit 0 at once.
//
// Nothing has been acknowledged yet and the WAL recovers from any stop, so
// there is nothing to drain. Without a handler a container's PID 1 never sees
// SIGTERM at all (the kernel drops signals whose action is the default for a
// PID namespace's init), so `docker stop` or a pod deletion while the broker
// loads its modules and recovers its WAL (seconds on a busy node) waited out
// the whole grace period and ended in SIGKILL. entry.ts arms this before any
// heavy module is loaded; serve() releases it once its own drain handler is on.
// operator/src/entry.ts uses it the same way for the operator.
// Only node: built-ins here, so it loads in no time.

let armed = false;

function onSignal(signal: NodeJS.Signals): void {
  process.stderr.write(`narad: ${signal} before it was ready: exiting\n`);
  process.exit(0);
}

export function armEarlyStop(): void {
  if (armed) return;
  armed = true;
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

export function releaseEarlyStop(): void {
  if (!armed) return;
  armed = false;
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
}
