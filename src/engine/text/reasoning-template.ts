/**
 * What a chat template says about reasoning: whether the model thinks in `<think>` blocks (its template handles
 * them: DeepSeek-R1 drops `</think>` and what precedes it from past turns, QwQ and Qwen3 open the block in the
 * generation prompt), whether it has a switch to turn thinking off (Qwen3's `enable_thinking`), and whether a
 * rendered prompt ends inside a block, so that generation starts with reasoning.
 */
import { THINK_CLOSE, THINK_OPEN } from "./reasoning-splitter.js";

/** The model writes `<think>…</think>` before its answer: its template knows the closing tag. */
export function templateReasons(source: string | undefined): boolean {
  return source?.includes(THINK_CLOSE) ?? false;
}

/** The template variable that turns thinking on or off, when the template reads one. */
export function thinkingSwitch(source: string | undefined): string | undefined {
  return source?.includes("enable_thinking") ? "enable_thinking" : undefined;
}

/**
 * Whether generation starts inside a `<think>` block: the template's generation prompt opened one (QwQ, newer
 * DeepSeek-R1 templates), or the client's prefill of the assistant turn did, and nothing closed it since.
 */
export function opensReasoning(templateOutput: string, prefill: string): boolean {
  const tail = (templateOutput.trimEnd().endsWith(THINK_OPEN) ? THINK_OPEN : "") + prefill;
  return tail.lastIndexOf(THINK_OPEN) > tail.lastIndexOf(THINK_CLOSE);
}
