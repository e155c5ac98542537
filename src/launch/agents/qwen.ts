/**
 * qwen-code: kiln's OpenAI-compatible API through its `openai` auth type (base URL and model on its command line,
 * the key in the environment), and a generated system-defaults file (its lowest settings layer, so the user's own
 * ~/.qwen settings still win) telling it the served context and keeping its traffic local.
 */
import { join } from "node:path";
import { AGENT_OUTPUT_TOKENS, SLOW_PREFILL_SECONDS, type Agent } from "../agent.js";

export const qwenAgent: Agent = {
  name: "qwen",
  title: "Qwen Code",
  binary: "qwen",
  install: "npm install -g @qwen-code/qwen-code",
  needsTools: true,
  // Its first request (system prompt and tools) is ~17.5k tokens.
  minContext: 24_576,
  setUp(target) {
    const path = join(target.configDir, "qwen-system-defaults.json");
    const timeout = String(SLOW_PREFILL_SECONDS * 1000);
    const defaults = {
      model: { generationConfig: { contextWindowSize: target.contextSize } },
      general: { enableAutoUpdate: false },
      privacy: { usageStatisticsEnabled: false },
    };
    return {
      env: {
        OPENAI_API_KEY: target.apiKey,
        QWEN_CODE_SYSTEM_DEFAULTS_PATH: path,
        QWEN_CODE_MAX_OUTPUT_TOKENS: String(AGENT_OUTPUT_TOKENS),
        // A cold first turn is minutes of prompt evaluation with no chunk for its stream guards to see (the OpenAI SDK
        // drops SSE comments): the silence between chunks, the whole stream and the request get Claude Code's bounds.
        QWEN_STREAM_IDLE_TIMEOUT_MS: timeout,
        QWEN_STREAM_MAX_LIFETIME_MS: timeout,
        QWEN_CODE_API_TIMEOUT_MS: timeout,
        QWEN_TELEMETRY_ENABLED: "0",
      },
      unset: [],
      args: ["--auth-type", "openai", "--openai-base-url", `${target.url}/v1`, "--model", target.model],
      files: [{ path, content: `${JSON.stringify(defaults, null, 2)}\n` }],
    };
  },
};
