/**
 * The conversation the reasoning tests show a model that is not trained to think in `<think>` blocks (no model that
 * is can be pulled here): a system prompt and one example turn teach the format; at temperature 0 the coder model
 * then reasons about the question in a short block and answers 42.
 */
export const REASONING_SYSTEM = "You think before you answer: first your reasoning between <think> and </think>, then the answer.";

/** The example turn and the question, as role and text. */
export const REASONING_TURNS = [
  { role: "user", content: "What is 2 + 3?" },
  { role: "assistant", content: "<think>\nThe user asks for 2 + 3. Adding them gives 5.\n</think>\n\n2 + 3 = 5." },
  { role: "user", content: "What is 17 + 25?" },
] as const;
