/**
 * Maps what clients actually send to the route table's paths: doubled slashes (`/v1//chat/completions`, from a
 * base URL with a trailing slash), a trailing slash, and base-path prefixes (`/prefix/v1/messages`, from a
 * reverse proxy or a base URL with a path). Pure, so the rules are testable without a server.
 */

/** A route pattern: literal segments, and optionally a last `:name` segment that captures the rest (may hold `/`). */
export type RoutePattern = string;

/** The route a path resolved to, with its captured parameter (still percent-encoded). */
export interface PathMatch {
  pattern: RoutePattern;
  /** The canonical path: the pattern with the captured rest filled in. */
  path: string;
  params: Record<string, string>;
}

/**
 * Whether a request target holds a `.` or `..` segment, plain or percent-encoded (`%2e`). URL parsing resolves
 * them, so `/v1/messages/../chat/completions` would reach another route than it names — past a proxy rule written
 * for the first. No client sends them, so app.ts refuses them instead of resolving them.
 */
export function hasDotSegment(target: string): boolean {
  const path = target.split(/[?#]/, 1)[0]!;
  return path.split("/").some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

/** Collapses repeated slashes and drops a trailing slash (`/` stays `/`). */
export function normalizeSlashes(pathname: string): string {
  const collapsed = `/${pathname.split("/").filter(Boolean).join("/")}`;
  return collapsed;
}

/**
 * Finds the pattern matching the path, or the longest suffix of it (a prefix is tolerated). Exact matches win;
 * `/` only matches exactly.
 */
export function matchCanonicalPath(pathname: string, patterns: RoutePattern[]): PathMatch | undefined {
  const segments = normalizeSlashes(pathname).split("/").filter(Boolean);
  for (let start = 0; start < segments.length; start++) {
    const rest = segments.slice(start);
    for (const pattern of patterns) {
      const params = matchSegments(pattern, rest);
      if (params) return { pattern, path: `/${rest.join("/")}`, params };
    }
  }
  if (segments.length === 0 && patterns.includes("/")) return { pattern: "/", path: "/", params: {} };
  return undefined;
}

function matchSegments(pattern: RoutePattern, segments: string[]): Record<string, string> | undefined {
  const parts = pattern.split("/").filter(Boolean);
  if (parts.length === 0) return undefined;
  const last = parts.at(-1)!;
  const capture = last.startsWith(":") ? last.slice(1) : undefined;
  const fixed = capture ? parts.slice(0, -1) : parts;
  if (capture ? segments.length <= fixed.length : segments.length !== fixed.length) return undefined;
  if (!fixed.every((part, i) => part === segments[i])) return undefined;
  return capture ? { [capture]: segments.slice(fixed.length).join("/") } : {};
}

/** Percent-decodes a path parameter; a malformed escape is kept as sent rather than failing the request. */
export function decodePathParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
