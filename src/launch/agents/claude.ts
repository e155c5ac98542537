/**
 * Claude Code: the Anthropic Messages API at kiln's base URL, every model tier mapped to the one served model, and
 * the settings that keep its prompt prefix identical from turn to turn (the per-session attribution header would
 * otherwise change the first system block) and its traffic local.
 */
import { AGENT_OUTPUT_TOKENS, SLOW_PREFILL_SECONDS, type Agent } from "../agent.js";

/** The smallest auto-compact window Claude Code accepts; smaller values are raised to it (with a warning). */
const CLAUDE_MIN_COMPACT_WINDOW = 100_000;
/** Room kept free below the context for the compaction request's own instructions. */
const COMPACT_MARGIN_TOKENS = 2048;

const TIER_VARIABLES = ["ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"];

export const claudeAgent: Agent = {
  name: "claude",
  title: "Claude Code",
  binary: "claude",
  install: "npm install -g @anthropic-ai/claude-code",
  needsTools: true,
  // Its full default prompt (system blocks and ~20 tools) is ~19k tokens.
  minContext: 24_576,
  setUp(target) {
    const timeout = String(SLOW_PREFILL_SECONDS * 1000);
    return {
      env: {
        ANTHROPIC_BASE_URL: target.url,
        ANTHROPIC_AUTH_TOKEN: target.apiKey,
        ...Object.fromEntries(TIER_VARIABLES.map((name) => [name, target.model])),
        CLAUDE_CODE_ATTRIBUTION_HEADER: "0",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        ...compactSettings(target.contextSize),
        CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(AGENT_OUTPUT_TOKENS),
        API_TIMEOUT_MS: timeout,
        CLAUDE_STREAM_IDLE_TIMEOUT_MS: timeout,
      },
      // An API key takes precedence over the token (and asks for approval in interactive sessions).
      unset: ["ANTHROPIC_API_KEY"],
      args: [],
      files: [],
    };
  },
};

/**
 * Makes Claude Code compact before the conversation outgrows the served context. It raises any window under 100k to
 * 100k, so a smaller context is reached through the percentage override instead: it compacts at that share of the
 * window less the output reserve, which is set to land one reply and a margin below the context.
 */
export function compactSettings(contextSize: number): Record<string, string> {
  if (contextSize >= CLAUDE_MIN_COMPACT_WINDOW) return { CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(contextSize) };
  const usable = CLAUDE_MIN_COMPACT_WINDOW - AGENT_OUTPUT_TOKENS;
  const threshold = contextSize - AGENT_OUTPUT_TOKENS - COMPACT_MARGIN_TOKENS;
  const percent = Math.max(1, Math.floor((threshold / usable) * 10_000) / 100);
  return { CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(CLAUDE_MIN_COMPACT_WINDOW), CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: String(percent) };
}
