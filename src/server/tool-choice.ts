/**
 * The one mapping of a requested tool choice onto the engine's, shared by every surface: a wire format only says
 * which of none | auto | required | one named tool it asked for, and how it words a refusal.
 */
import type { EngineError, ToolChoice } from "../engine/index.js";

/** A tool choice as a wire format asked for it: a mode, or one tool by name. */
export type RequestedToolChoice = "none" | "auto" | "required" | { name: string };

/** Why a choice cannot be honoured: a call is required but no tools are offered, or the named one is not offered. */
export type ToolChoiceProblem = "no-tools" | "unknown-tool";

/** Options of {@link resolveToolChoice}. */
export interface ToolChoiceOptions {
  /** Whether several calls may come in one turn; undefined: the backend's default. */
  parallel?: boolean | null;
  /** Names of the tools the request offers. */
  tools: readonly string[];
  /** The surface's error for a choice it cannot honour (a 400 naming the field). */
  refuse(problem: ToolChoiceProblem): EngineError;
}

/** Maps a requested choice, refusing one that needs a tool the request does not offer. */
export function resolveToolChoice(choice: RequestedToolChoice, options: ToolChoiceOptions): ToolChoice {
  const parallel = options.parallel == null ? {} : { parallel: options.parallel };
  if (choice === "none") return { type: "none" };
  if (choice === "auto") return { type: "auto", ...parallel };
  if (options.tools.length === 0) throw options.refuse("no-tools");
  if (choice === "required") return { type: "required", ...parallel };
  if (!options.tools.includes(choice.name)) throw options.refuse("unknown-tool");
  return { type: "tool", name: choice.name, ...parallel };
}
