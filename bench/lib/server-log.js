/** Reads kiln's JSON request log (one line per request) for the requests made during one agent run. */
import { readFileSync } from "node:fs";

/** The routes each agent calls, so a run's entries are told apart from other clients' on the same server. */
const AGENT_ROUTES = {
  claude: ["/v1/messages", "/v1/messages/count_tokens"],
  codex: ["/v1/responses"],
  opencode: ["/v1/chat/completions"],
  aider: ["/v1/chat/completions"],
};
const GENERATION_ROUTES = new Set(["/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/completions"]);

/** Log entries written at or after line `from`. */
export function readLogEntries(path, from = 0) {
  let lines;
  try {
    lines = readFileSync(path, "utf8").split("\n");
  } catch {
    return { entries: [], next: 0 };
  }
  const entries = lines.slice(from).flatMap((line) => {
    if (!line.startsWith("{")) return [];
    try {
      const entry = JSON.parse(line);
      return entry.msg === "request" ? [entry] : [];
    } catch {
      return [];
    }
  });
  return { entries, next: Math.max(lines.length - 1, 0) };
}

/** Requests, tokens, TTFT per request and errors of one agent run's entries (its own routes, plus 404s). */
export function summarizeEntries(agent, all) {
  const routes = new Set(AGENT_ROUTES[agent] ?? []);
  const entries = all.filter((e) => routes.has(e.route) || e.route === "unmatched");
  const turns = entries.filter((e) => GENERATION_ROUTES.has(e.route));
  const sum = (key) => turns.reduce((total, e) => total + (e[key] ?? 0), 0);
  return {
    turns: turns.length,
    inputTokens: sum("inputTokens"),
    cachedInputTokens: sum("cachedInputTokens"),
    outputTokens: sum("outputTokens"),
    ttftMs: turns.map((e) => e.timeToFirstTokenMs ?? null),
    // 499: the agent hung up (its own timeout); still listed, it is what the agent saw.
    errors: entries.filter((e) => e.status >= 400 || e.error).map((e) => ({ route: e.route, status: e.status, error: e.error ?? null })),
  };
}
