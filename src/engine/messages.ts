/**
 * The internal request language: every surface (Anthropic, OpenAI, CLI, chat) translates its wire format into
 * a ChatRequest, and every backend consumes one. Messages are ordered typed parts — never flattened — because
 * block order matters to templates and to tool round trips.
 */

/** Plain text. */
export interface TextPart { type: "text"; text: string }

/** An image the user attached. Backends without vision refuse it with an `invalid_request` EngineError. */
export interface ImagePart { type: "image"; mediaType: string; source: { kind: "base64"; data: string } | { kind: "url"; url: string } }

/** Model reasoning carried in history (Anthropic thinking blocks, OpenAI reasoning_content). */
export interface ReasoningPart { type: "reasoning"; text: string; signature?: string }

/** A tool call the assistant made. `input` is the parsed JSON object of arguments. */
export interface ToolCallPart { type: "tool-call"; id: string; name: string; input: unknown }

/** The result of a tool call, sent back by the client in a later turn. */
export interface ToolResultPart { type: "tool-result"; toolCallId: string; content: Array<TextPart | ImagePart>; isError?: boolean }

export type Part = TextPart | ImagePart | ReasoningPart | ToolCallPart | ToolResultPart;

/**
 * One turn. `system` inside messages is a mid-conversation instruction (Claude Code sends these); `tool` carries
 * tool results (OpenAI role "tool"; Anthropic puts tool_result parts in a user turn — both are accepted).
 */
export interface Message { role: "system" | "user" | "assistant" | "tool"; parts: Part[] }

/** A tool the model may call. `inputSchema` is a JSON Schema object (kept verbatim). */
export interface ToolSpec { name: string; description?: string; inputSchema: Record<string, unknown> }

/**
 * auto: the model decides; none: no tool calls (tools still described); required: at least one call, any tool;
 * tool: exactly the named tool. `parallel: false` allows at most one call.
 */
export type ToolChoice =
  | { type: "auto"; parallel?: boolean }
  | { type: "none" }
  | { type: "required"; parallel?: boolean }
  | { type: "tool"; name: string; parallel?: boolean };

/** Sampling. temperature 0 means greedy. Omitted fields take the backend's defaults. */
export interface SamplingOptions {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  repeatPenalty?: number;
  /** Token id → a bias added to its logit (OpenAI `logit_bias`, -100…100); ids are checked against the vocabulary. */
  logitBias?: Record<number, number>;
  /**
   * Generate past end-of-generation tokens, until max tokens or a stop sequence (vLLM's and llama-server's
   * `ignore_eos`: benchmarks use it so that every request generates the same number of tokens).
   */
  ignoreEos?: boolean;
}

/** Constrains the output: free text, any JSON object, or JSON valid against a schema (grammar-enforced). */
export type ResponseFormat = { type: "text" } | { type: "json" } | { type: "json-schema"; schema: Record<string, unknown>; name?: string };

/** A chat request in the internal language. */
export interface ChatRequest {
  /** Model name as the client sent it (resolved by the engine; unknown → not_found). */
  model: string;
  /** Leading instructions (system prompt), already joined by the adapter. */
  system?: string;
  messages: Message[];
  tools?: ToolSpec[];
  toolChoice?: ToolChoice;
  sampling?: SamplingOptions;
  /** Stop sequences; the matched one is reported in `finish.stopSequence` and is not part of the text. */
  stop?: string[];
  /** Hard cap on generated tokens. */
  maxTokens: number;
  responseFormat?: ResponseFormat;
  /**
   * Whether a reasoning model should think before answering, for templates with a switch (Qwen3's
   * `enable_thinking`); undefined: the template's default. Models without a switch ignore it.
   */
  thinking?: boolean;
  /** Tokens the model may think for: past them kiln closes its think block and the answer follows. */
  thinkingBudget?: number;
  /** Report each generated token's logprob with this many top alternatives (0–20); undefined: no logprobs. */
  logprobs?: number;
  /** Opaque per-request data (request id, key id) for logs; never affects generation. */
  metadata?: Record<string, string>;
}

/**
 * A raw completion (OpenAI /v1/completions): the prompt is tokenized as-is, special tokens included, no chat
 * template, or given as token ids. `suffix` asks for fill-in-the-middle (refused where the model has no FIM tokens).
 */
export interface CompletionRequest {
  model: string;
  /** Text, or token ids taken as they are (checked against the vocabulary). */
  prompt: string | number[];
  suffix?: string;
  sampling?: SamplingOptions;
  stop?: string[];
  maxTokens: number;
  /** Report each token's logprob with this many top alternatives (0–5); undefined: no logprobs. */
  logprobs?: number;
  /** Return the prompt in `start.echo` (with its tokens' logprobs when `logprobs` is set). */
  echo?: boolean;
  metadata?: Record<string, string>;
}
