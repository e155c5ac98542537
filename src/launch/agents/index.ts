/** The agents `kiln launch` runs, by name. */
import type { Agent } from "../agent.js";
import { aiderAgent } from "./aider.js";
import { claudeAgent } from "./claude.js";
import { codexAgent } from "./codex.js";
import { opencodeAgent } from "./opencode.js";
import { qwenAgent } from "./qwen.js";

export const AGENTS: readonly Agent[] = [claudeAgent, codexAgent, opencodeAgent, qwenAgent, aiderAgent];

/** The agent called `name`, or undefined. */
export function findAgent(name: string): Agent | undefined {
  return AGENTS.find((agent) => agent.name === name);
}
