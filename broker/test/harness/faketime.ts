// libfaketime for the clock-jump test, obtained like the control-plane
// binaries: the system's copy when installed, else a copy extracted under
// ~/.cache from the Debian package (apt-get download + dpkg-deb -x, no system
// change besides refreshing apt's lists when they are empty), so `npm test`
// works on a fresh machine without a manual install.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

const MULTIARCH: Record<string, string> = { x64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu" };
const LIB = "faketime/libfaketimeMT.so.1";

function libUnder(root: string): string | undefined {
  const arch = MULTIARCH[process.arch];
  if (arch === undefined) return undefined;
  const path = join(root, "usr/lib", arch, LIB);
  return existsSync(path) ? path : undefined;
}

function download(into: string): string {
  const get = () => execFileSync("apt-get", ["download", "libfaketime"], { cwd: into, stdio: "pipe" });
  try {
    get();
  } catch {
    // A fresh image may ship without package lists.
    execFileSync("apt-get", ["update", "-qq"], { stdio: "pipe" });
    get();
  }
  const deb = readdirSync(into).find((f) => f.endsWith(".deb"));
  if (deb === undefined) throw new Error("apt-get download libfaketime produced no .deb");
  return join(into, deb);
}

/** The path of libfaketimeMT.so.1, fetching it into ~/.cache on first use. */
export function ensureFaketime(): string {
  const system = libUnder("/");
  if (system !== undefined) return system;
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "narad-faketime");
  const cached = libUnder(cache);
  if (cached !== undefined) return cached;
  const work = mkdtempSync(join(tmpdir(), "narad-faketime-"));
  try {
    const deb = download(work);
    const staged = join(work, "root");
    execFileSync("dpkg-deb", ["-x", deb, staged], { stdio: "pipe" });
    if (libUnder(staged) === undefined) throw new Error(`${deb} has no ${LIB}`);
    mkdirSync(join(cache, ".."), { recursive: true });
    rmSync(cache, { recursive: true, force: true });
    renameSync(staged, cache);
  } catch (err) {
    throw new Error(
      `libfaketime is needed for the clock-jump test and could not be fetched (${(err as Error).message}); install it with: apt-get install libfaketime`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const lib = libUnder(cache);
  if (lib === undefined) throw new Error(`libfaketime not found under ${cache} after extraction`);
  return lib;
}
