// Writes docs/openapi.json: the OpenAPI 3 document the broker serves at
// GET /v1/openapi.json, generated from the route schemas. Run after
// changing a route (`npm run gen:openapi`); broker/src/http/openapi.test.ts
// fails while the checked-in copy is stale.

import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openApiFile, serialiseOpenApi, servedOpenApi } from "../broker/src/http/openapi-document.ts";

const root = resolve(import.meta.dirname, "..");
writeFileSync(join(root, openApiFile), serialiseOpenApi(await servedOpenApi()));
console.log(`wrote ${openApiFile}`);
