/**
 * Codex: a CODEX_HOME owned by kiln whose config.toml defines kiln as the model provider (the Responses API at
 * `{url}/v1`), so the user's own ~/.codex is never read or written.
 */
import { join } from "node:path";
import { SLOW_PREFILL_SECONDS, type Agent } from "../agent.js";

export const codexAgent: Agent = {
  name: "codex",
  title: "Codex CLI",
  binary: "codex",
  install: "npm install -g @openai/codex",
  needsTools: true,
  minContext: 16_384,
  setUp(target) {
    const home = join(target.configDir, "codex");
    const config = [
      `model = ${JSON.stringify(target.model)}`,
      `model_provider = "kiln"`,
      `model_context_window = ${target.contextSize}`,
      `model_auto_compact_token_limit = ${Math.floor(target.contextSize * 0.8)}`,
      `check_for_update_on_startup = false`,
      "",
      "[model_providers.kiln]",
      `name = "kiln"`,
      `base_url = ${JSON.stringify(`${target.url}/v1`)}`,
      `env_key = "KILN_API_KEY"`,
      `wire_api = "responses"`,
      `stream_idle_timeout_ms = ${SLOW_PREFILL_SECONDS * 1000}`,
      `request_max_retries = 1`,
      `supports_websockets = false`,
      "",
    ].join("\n");
    return {
      env: { CODEX_HOME: home, KILN_API_KEY: target.apiKey },
      unset: [],
      args: [],
      files: [{ path: join(home, "config.toml"), content: config }],
    };
  },
};
