// Fails fast when npm scripts run on the system Node instead of the project's
// Node 24 (the `node` devDependency puts it first on PATH for npm scripts).
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  console.error(`narad needs Node 24+, running ${process.version}; run through npm scripts after npm ci`);
  process.exit(1);
}
