// Image → host command table. There is no container runtime here: a pod's
// "image" only selects which local program runs, always with the repo's own
// Node 24 binary, so tests exercise the working tree rather than a build.
//
// Rule for every entry: the tag or digest is ignored. If the container's
// `command` is absent, or its first element is the entry's `alias` (for
// example ["narad"] or ["narad", "serve"]), the alias is replaced by
// `node <entry script>` and the rest of `command` and then `args` follow.
// Any other `command` is run as given (an absolute host path such as
// /bin/sh), followed by `args`, exactly like a real runtime would.
//
//   repository                    alias            runs
//   ghcr.io/narad/narad           narad            broker/src/main.ts
//   ghcr.io/narad/narad-operator  narad-operator   operator/src/main.ts
//   narad.test/echo               echo-server      e2e/platform/node-agent/testdata/echo-server.ts
//   narad.test/node               node             (no script: `node` + the rest, for test scripts)
//
// Anything else is reported as an image pull error.

import path from "node:path";

export interface ImageEntry {
  readonly repository: string;
  readonly alias: string;
  /** Script relative to the repo root, or null to run bare `node`. */
  readonly script: string | null;
}

export const IMAGE_TABLE: readonly ImageEntry[] = [
  { repository: "ghcr.io/narad/narad", alias: "narad", script: "broker/src/main.ts" },
  { repository: "ghcr.io/narad/narad-operator", alias: "narad-operator", script: "operator/src/main.ts" },
  {
    repository: "narad.test/echo",
    alias: "echo-server",
    script: "e2e/platform/node-agent/testdata/echo-server.ts",
  },
  { repository: "narad.test/node", alias: "node", script: null },
];

export const IMAGE_NOT_FOUND_MESSAGE = "image not in node-agent table";

/** Strips `:tag` and `@digest`; a colon before the last slash is a registry port. */
export function imageRepository(image: string): string {
  const at = image.indexOf("@");
  const noDigest = at >= 0 ? image.slice(0, at) : image;
  const lastSlash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > lastSlash ? noDigest.slice(0, colon) : noDigest;
}

export type ResolvedCommand =
  | { readonly ok: true; readonly argv: readonly string[] }
  | { readonly ok: false; readonly message: string };

export function resolveImageCommand(
  image: string,
  command: readonly string[] | undefined,
  args: readonly string[] | undefined,
  repoRoot: string,
): ResolvedCommand {
  const repo = imageRepository(image);
  const entry = IMAGE_TABLE.find((e) => e.repository === repo);
  if (!entry) return { ok: false, message: `${IMAGE_NOT_FOUND_MESSAGE}: ${repo}` };
  const node = path.join(repoRoot, "node_modules/.bin/node");
  const base = entry.script === null ? [node] : [node, path.join(repoRoot, entry.script)];
  const rest = args ?? [];
  if (!command || command.length === 0) return { ok: true, argv: [...base, ...rest] };
  if (command[0] === entry.alias) return { ok: true, argv: [...base, ...command.slice(1), ...rest] };
  return { ok: true, argv: [...command, ...rest] };
}

/** A stable pseudo image ID so containerStatuses.imageID is never empty. */
export function imageId(image: string): string {
  return `narad-agent://${imageRepository(image)}`;
}
