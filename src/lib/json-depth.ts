/**
 * One nesting limit for all JSON kiln reads. JSON.parse accepts any depth, but what comes after it recurses (chat
 * templates, the grammar builder, validation, JSON.stringify itself near 5,000 levels), so the limit is checked once,
 * iteratively, where JSON comes in: request bodies, JSON-in-string tool arguments, model and upstream tool calls.
 */

/** Deepest nesting accepted: far beyond real schemas and tool inputs, far below any stack limit. */
export const MAX_JSON_DEPTH = 100;

/** Path segments shown when naming where a value is too deep (the rest is elided). */
const SHOWN_SEGMENTS = 8;

/** A JSON value nested deeper than {@link MAX_JSON_DEPTH}; `path` names where it crossed the limit. */
export class JsonTooDeepError extends Error {
  constructor(readonly path: string) {
    super(`${path}: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
}

interface Visit { value: unknown; depth: number; parent?: Visit; key?: string | number }

/** The dot path (first segments, `…` when cut) where `value` nests deeper than `limit`, or undefined. */
export function findTooDeep(value: unknown, limit = MAX_JSON_DEPTH): string | undefined {
  const stack: Visit[] = [{ value, depth: 0 }];
  for (let visit = stack.pop(); visit; visit = stack.pop()) {
    if (typeof visit.value !== "object" || visit.value === null) continue;
    if (visit.depth >= limit) return pathOf(visit);
    const entries: Array<[string | number, unknown]> = Array.isArray(visit.value) ? visit.value.map((item, i) => [i, item]) : Object.entries(visit.value);
    for (const [key, child] of entries) if (typeof child === "object" && child !== null) stack.push({ value: child, depth: visit.depth + 1, parent: visit, key });
  }
  return undefined;
}

/** JSON.parse within the nesting limit: throws SyntaxError for bad JSON, JsonTooDeepError (path from `root`) for depth. */
export function parseBoundedJson(text: string, root = ""): unknown {
  const value: unknown = JSON.parse(text);
  const path = findTooDeep(value);
  if (path !== undefined) throw new JsonTooDeepError([root, path].filter(Boolean).join(".") || "body");
  return value;
}

function pathOf(visit: Visit): string {
  const keys: Array<string | number> = [];
  for (let at: Visit | undefined = visit; at?.parent; at = at.parent) keys.push(at.key!);
  keys.reverse();
  return keys.slice(0, SHOWN_SEGMENTS).join(".") + (keys.length > SHOWN_SEGMENTS ? ".…" : "");
}
