// The Authorization header, parsed (pure): Basic base64(user:password) or
// Bearer <token>. Anything else is a malformed header, answered 401 like a
// wrong password (never 400: a client without credentials learns the same).

export type Credentials =
  | { kind: "basic"; user: string; password: string }
  | { kind: "bearer"; token: string }
  | { kind: "none" }
  | { kind: "malformed"; reason: string };

/** Bounded so a huge header costs nothing to decode. */
const maxHeaderLength = 8192;

export function parseAuthorization(header: string | undefined): Credentials {
  if (header === undefined || header === "") return { kind: "none" };
  if (header.length > maxHeaderLength) return { kind: "malformed", reason: "Authorization header too long" };
  const space = header.indexOf(" ");
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? "" : header.slice(space + 1).trim();
  if (scheme === "bearer") {
    if (value === "") return { kind: "malformed", reason: "empty bearer token" };
    return { kind: "bearer", token: value };
  }
  if (scheme === "basic") {
    if (!/^[A-Za-z0-9+/]+=*$/.test(value))
      return { kind: "malformed", reason: "Basic credentials are not base64" };
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon <= 0) return { kind: "malformed", reason: "Basic credentials must be user:password" };
    return { kind: "basic", user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return { kind: "malformed", reason: `unsupported Authorization scheme "${scheme}" (use Basic or Bearer)` };
}

/** "Basic base64(user:password)". */
export function basicHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}
