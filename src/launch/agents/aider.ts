/**
 * aider: kiln's OpenAI-compatible API through its `openai/` model prefix, with a model metadata file so it knows
 * the served context instead of warning about an unknown model. aider edits through text formats, not tool calls.
 */
import { join } from "node:path";
import { AGENT_OUTPUT_TOKENS, SLOW_PREFILL_SECONDS, type Agent } from "../agent.js";

export const aiderAgent: Agent = {
  name: "aider",
  title: "aider",
  binary: "aider",
  install: "python -m pip install aider-chat   (or: pipx install aider-chat)",
  needsTools: false,
  minContext: 8_192,
  setUp(target) {
    const model = `openai/${target.model}`;
    const metadata = join(target.configDir, "aider-models.json");
    const facts = { [model]: { max_input_tokens: target.contextSize, max_output_tokens: AGENT_OUTPUT_TOKENS, litellm_provider: "openai", mode: "chat" } };
    return {
      env: { OPENAI_API_KEY: target.apiKey },
      unset: [],
      args: [
        "--openai-api-base", `${target.url}/v1`,
        "--model", model,
        "--weak-model", model,
        "--model-metadata-file", metadata,
        "--timeout", String(SLOW_PREFILL_SECONDS),
        "--no-show-model-warnings",
        "--no-check-update",
        "--analytics-disable",
      ],
      files: [{ path: metadata, content: `${JSON.stringify(facts, null, 2)}\n` }],
    };
  },
};
