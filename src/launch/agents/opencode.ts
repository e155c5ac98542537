/**
 * opencode: OPENCODE_CONFIG names a generated JSON config with kiln as an OpenAI-compatible provider (merged over
 * the user's own config, which stays untouched) and the served model, with its real context, as the default.
 */
import { join } from "node:path";
import { AGENT_OUTPUT_TOKENS, SLOW_PREFILL_SECONDS, type Agent } from "../agent.js";

export const opencodeAgent: Agent = {
  name: "opencode",
  title: "opencode",
  binary: "opencode",
  install: "npm install -g opencode-ai",
  needsTools: true,
  minContext: 16_384,
  setUp(target) {
    const path = join(target.configDir, "opencode.json");
    const model = `kiln/${target.model}`;
    const config = {
      $schema: "https://opencode.ai/config.json",
      provider: {
        kiln: {
          npm: "@ai-sdk/openai-compatible",
          name: "kiln",
          options: { baseURL: `${target.url}/v1`, apiKey: "{env:KILN_API_KEY}", timeout: SLOW_PREFILL_SECONDS * 1000 },
          models: { [target.model]: { name: target.model, tool_call: true, limit: { context: target.contextSize, output: AGENT_OUTPUT_TOKENS } } },
        },
      },
      model,
      small_model: model,
      autoupdate: false,
      share: "disabled",
    };
    return {
      env: { OPENCODE_CONFIG: path, KILN_API_KEY: target.apiKey },
      unset: [],
      args: [],
      files: [{ path, content: `${JSON.stringify(config, null, 2)}\n` }],
    };
  },
};
