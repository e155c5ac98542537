/**
 * Deterministic prompt text: the same prompts go to every side of the benchmark. Sizes are in tokens of the default
 * model's tokenizer, measured by the caller (see fitToTokens).
 */

const WORDS = ("the a server model token cache prefix request stream batch queue context sequence latency memory "
  + "thread kernel decode prompt answer client file function value error retry agent tool result system user "
  + "write read build test compile deploy config option flag module import export class method return string "
  + "number array object promise async await event handler router schema parse render template vector matrix "
  + "weight layer head attention norm bandwidth core socket buffer chunk slot scheduler budget limit").split(" ");

/** A seeded PRNG (mulberry32), so every run renders byte-identical prompts. */
function createRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pseudo-English prose of about `words` words. */
export function makeProse(seed, words) {
  const random = createRandom(seed);
  const out = [];
  for (let i = 0; i < words; i++) {
    let w = WORDS[Math.floor(random() * WORDS.length)];
    if (i % 12 === 0) w = w[0].toUpperCase() + w.slice(1);
    out.push(i % 12 === 11 ? `${w}.` : w);
  }
  return out.join(" ");
}

/**
 * Grows or shrinks prose until countTokens(text) is within a few tokens of target.
 * @param {(text: string) => number} countTokens
 */
export function fitToTokens(seed, target, countTokens) {
  let words = target;
  let text = makeProse(seed, words);
  for (let i = 0; i < 8; i++) {
    const n = countTokens(text);
    if (Math.abs(n - target) <= 2) break;
    words = Math.max(1, Math.round((words * target) / n));
    text = makeProse(seed, words);
  }
  return text;
}

/** A prompt that invites a long answer, for generation-rate runs (stops are bounded by max tokens). */
export function generationPrompt(tag) {
  return `[${tag}] Write a long, detailed story about a lighthouse keeper who repairs clocks. Do not stop early.`;
}

const TOOL_NAMES = ["read_file", "write_file", "list_directory", "search_code", "run_command", "git_diff", "git_log",
  "http_get", "run_tests", "format_code", "lint_code", "open_url"];

/** An agent-style system prompt: instructions plus a JSON tool list, roughly `approxWords` words of prose. */
export function agentSystemPrompt(approxWords) {
  const tools = TOOL_NAMES.map((name, i) => ({
    name,
    description: makeProse(100 + i, 18),
    input_schema: { type: "object", properties: { path: { type: "string" }, limit: { type: "integer" } }, required: ["path"] },
  }));
  return [
    "You are a coding agent working in a repository. Use the tools to inspect and change files.",
    makeProse(7, approxWords),
    "# Tools",
    JSON.stringify(tools),
  ].join("\n\n");
}

/** The scripted part of agent turn `turn` of conversation `conv`: a user message, a tool call and its result. */
export function agentTurn(conv, turn) {
  const tool = TOOL_NAMES[(turn + conv) % TOOL_NAMES.length];
  return {
    user: `Turn ${turn}: please look at src/module-${conv}-${turn}.ts and tell me what to change.`,
    toolCall: `I will call ${tool} with {"path": "src/module-${conv}-${turn}.ts"}.`,
    toolResult: `Result of ${tool}:\n${makeProse(1000 * conv + turn, 110)}`,
  };
}
