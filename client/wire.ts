// The wire format the client shares with the broker: the @narad/wire package
// (packages/wire). In the repository it is imported from its sources, so the
// client runs from .ts with no build; the published build of @narad/client
// imports the package instead (scripts/build-packages.ts rewrites this one
// specifier, and only this one, in dist/wire.js and dist/wire.d.ts).
export { createRotator, encodeBinaryBatch, partitionForKey } from "../packages/wire/src/index.ts";
