/**
 * What `kiln launch` knows about a coding agent: how to find and install it, what it needs from a model, and how to
 * point it at kiln (environment, arguments, generated config files) without touching the user's own configuration.
 */

/** Where kiln serves the model an agent is pointed at. */
export interface LaunchTarget {
  /** kiln's base URL, without `/v1` (Anthropic clients append `/v1/messages` themselves). */
  url: string;
  apiKey: string;
  /** The model id as kiln serves it. */
  model: string;
  /** The context size kiln serves the model with, in tokens. */
  contextSize: number;
  /** A kiln-owned directory for the agent's generated configuration. */
  configDir: string;
}

/** A file an agent setup writes (inside the kiln-owned config directory). */
export interface GeneratedFile {
  path: string;
  content: string;
}

/** How to run an agent against a target. */
export interface AgentSetup {
  /** Variables set for the agent (printed, so a user can set them by hand). */
  env: Record<string, string>;
  /** Variables removed from the agent's environment (they would override `env`). */
  unset: string[];
  /** Arguments placed before the user's own. */
  args: string[];
  files: GeneratedFile[];
}

/** One agent `kiln launch` can run. */
export interface Agent {
  /** The name on kiln's command line. */
  name: string;
  title: string;
  /** The executable looked up on PATH. */
  binary: string;
  /** How to install it, shown when the binary is missing. */
  install: string;
  /** Whether the agent works through tool calls (so the model must support them). */
  needsTools: boolean;
  /** The least context the agent's prompt plus a reply needs, in tokens. */
  minContext: number;
  setUp(target: LaunchTarget): AgentSetup;
}

/** Seconds an agent may wait for a first byte: a cold CPU prefill of a long agent prompt takes minutes. */
export const SLOW_PREFILL_SECONDS = 1800;

/** Output tokens an agent is told to plan for (a local model's context is small; agents default to 32k+). */
export const AGENT_OUTPUT_TOKENS = 4096;
