// Which methods the API serves on a concrete path, from the route patterns
// fastify registered (`/v1/topics/:topic/produce`). Pure; used to answer a
// known path asked with the wrong method with 405 and `Allow`.

export interface RouteTable {
  add(method: string | readonly string[], pattern: string): void;
  /** Methods whose pattern matches `path`, sorted; empty for an unknown path. */
  methodsFor(path: string): string[];
}

function compile(pattern: string): RegExp {
  const parts = pattern.split("/").map((segment) => {
    if (segment.startsWith(":")) return "[^/]+";
    if (segment === "*") return ".*";
    return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  });
  return new RegExp(`^${parts.join("/")}/?$`);
}

export function createRouteTable(): RouteTable {
  const routes: { method: string; match: RegExp }[] = [];
  return {
    add(method, pattern) {
      const match = compile(pattern);
      for (const m of typeof method === "string" ? [method] : method) routes.push({ method: m, match });
    },
    methodsFor(path) {
      const methods = new Set<string>();
      for (const r of routes) if (r.match.test(path)) methods.add(r.method);
      return [...methods].sort();
    },
  };
}
