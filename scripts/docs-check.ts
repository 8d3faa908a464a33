// Checks the documentation as a reader follows it: every relative link in
// README.md and docs/ points at a file that exists, every `#anchor` names a
// heading of its target page, and every page under docs/ can be reached from
// the README by following links. `node scripts/docs-check.ts` prints the
// problems and exits 1 when there are any; the unit test runs the same check.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a markdown page defines, numbered like GitHub for repeated headings. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inCode = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    if (inCode) continue;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = headingSlug((m[1] ?? "").replace(/`/g, ""));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown links outside code blocks and inline code: [text](target). */
export function linksOf(markdown: string): string[] {
  const links: string[] = [];
  let inCode = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    if (inCode) continue;
    const prose = line.replace(/`[^`]*`/g, "");
    for (const m of prose.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) links.push(m[1] ?? "");
  }
  return links;
}

function markdownFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

/** Every problem found, as "file: message" lines; empty when the docs are sound. */
export function checkDocs(root: string): string[] {
  const problems: string[] = [];
  const readme = join(root, "README.md");
  const pages = [readme, ...markdownFiles(join(root, "docs"))];
  const reachable = new Set<string>();
  const queue = [readme];
  const linksFrom = new Map<string, string[]>();
  for (const page of pages) {
    const text = readFileSync(page, "utf8");
    const targets: string[] = [];
    for (const link of linksOf(text)) {
      if (/^[a-z]+:/i.test(link)) continue; // http:, https:, mailto:
      const [pathPart = "", anchor] = link.split("#", 2);
      const target = pathPart === "" ? page : resolve(dirname(page), decodeURIComponent(pathPart));
      const where = relative(root, page);
      if (!existsSync(target)) {
        problems.push(`${where}: link to missing ${link}`);
        continue;
      }
      if (anchor !== undefined && anchor !== "") {
        if (!target.endsWith(".md")) {
          problems.push(`${where}: anchor on a non-markdown file ${link}`);
        } else if (!anchorsOf(readFileSync(target, "utf8")).has(anchor)) {
          problems.push(`${where}: no heading #${anchor} in ${relative(root, target)}`);
        }
      }
      targets.push(target);
    }
    linksFrom.set(page, targets);
  }
  while (queue.length > 0) {
    const page = queue.pop() as string;
    if (reachable.has(page)) continue;
    reachable.add(page);
    for (const next of linksFrom.get(page) ?? []) if (next.endsWith(".md")) queue.push(next);
  }
  for (const page of pages) {
    if (!reachable.has(page)) problems.push(`${relative(root, page)}: not reachable from README.md`);
  }
  return problems;
}

if (import.meta.main) {
  const problems = checkDocs(resolve(import.meta.dirname, ".."));
  for (const p of problems) console.error(p);
  process.exit(problems.length === 0 ? 0 : 1);
}
