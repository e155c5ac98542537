/**
 * A request reduced to tokens and limits, the same way for every local backend: the conversation rendered with the
 * model's chat template and tokenized, the output budget clamped to the context left, the grammar a tool choice or
 * response format demands.
 */
import { contextOverflow, EngineError } from "../errors/engine-error.js";
import type { ChatRequest, CompletionRequest, SamplingOptions, ToolSpec } from "./messages.js";
import type { ReasoningParsing, ToolParsing } from "./text/output-assembler.js";
import { toToolShape } from "./text/tool-call-json.js";
import { prepareChatPrompt } from "./text/render-prompt.js";
import { opensReasoning, templateReasons } from "./text/reasoning-template.js";
import { THINK_CLOSE, THINK_OPEN } from "./text/reasoning-splitter.js";
import { responseFormatGrammar, toolCallGrammar } from "./text/grammar.js";
import type { PromptPiece } from "./text/control-text.js";
import type { Vocabulary } from "./text/vocabulary.js";

export interface GenerationPlan {
  modelId: string;
  prompt: number[];
  /** Already clamped to the context left after the prompt. */
  maxTokens: number;
  sampling?: SamplingOptions;
  stop: string[];
  /** GBNF constraining the output, and the request field it came from (for error messages). */
  grammar?: { text: string; param: string };
  tools?: ToolParsing;
  /** The model thinks in `<think>` blocks, split out of its output as reasoning. */
  reasoning?: ReasoningParsing;
  /** Report each generated token's logprob with this many top alternatives; undefined: no logprobs. */
  logprobs?: number;
  /** Echo the prompt in the start event: its text, and whether its tokens' logprobs are owed too. */
  echo?: { text: string; logprobs: boolean };
}

/** The model a plan is made for. */
export interface PlanTarget {
  modelId: string;
  vocabulary: Vocabulary;
  /** Tokens per sequence (prompt + output). */
  ctxSize: number;
  /** Whether the model thinks in `<think>` blocks (the model's configuration); undefined: as its template says. */
  reasoning?: boolean;
}

export async function planChat(target: PlanTarget, request: ChatRequest): Promise<GenerationPlan> {
  const { pieces, start } = await renderChat(target, request);
  rejectUnfit(target, pieces);
  const prompt = await target.vocabulary.tokenizePrompt(pieces);
  const toolsOn = (request.tools?.length ?? 0) > 0 && request.toolChoice?.type !== "none";
  const choice = request.toolChoice ?? { type: "auto" as const };
  const toolGrammar = toolsOn ? toolCallGrammar(request.tools ?? [], choice) : undefined;
  const formatGrammar = toolGrammar || !request.responseFormat ? undefined : responseFormatGrammar(request.responseFormat);
  const grammar = toolGrammar ? { text: toolGrammar, param: "tools" } : formatGrammar ? { text: formatGrammar, param: "response_format" } : undefined;
  return {
    ...basePlan(target, prompt, request),
    logprobs: request.logprobs,
    grammar,
    tools: toolsOn ? toToolParsing(request.tools ?? [], "parallel" in choice ? choice.parallel ?? true : true) : undefined,
    // A grammar makes the whole output the call or the JSON it demands, even where the prompt opened a think block.
    reasoning: grammar || !start ? undefined : {
      ...start,
      ...(request.thinkingBudget !== undefined ? { budget: { tokens: request.thinkingBudget, close: target.vocabulary.tokenize(`\n${THINK_CLOSE}\n\n`, false) } } : {}),
    },
  };
}

export async function planCompletion(target: PlanTarget, request: CompletionRequest): Promise<GenerationPlan> {
  const prompt = await tokenizeCompletion(target, request);
  if (prompt.length === 0) throw new EngineError("invalid_request", "prompt: must not be empty", { param: "prompt" });
  const echo = request.echo
    ? { text: typeof request.prompt === "string" ? request.prompt : target.vocabulary.detokenize(prompt, true), logprobs: request.logprobs !== undefined }
    : undefined;
  return { ...basePlan(target, prompt, request), logprobs: request.logprobs, echo };
}

/** Text prompts are tokenized (FIM order with a suffix); token-id prompts are taken as sent, once checked. */
async function tokenizeCompletion(target: PlanTarget, request: CompletionRequest): Promise<number[]> {
  const { prompt, suffix } = request;
  if (typeof prompt !== "string") {
    if (suffix !== undefined) throw new EngineError("invalid_request", "suffix: fill-in-the-middle needs a text prompt", { param: "suffix" });
    checkTokenIds(target, prompt, "prompt");
    return prompt;
  }
  return suffix === undefined ? tokenizeRaw(target, prompt) : tokenizeInfill(target, prompt, suffix);
}

/** What every plan has: the prompt, the output budget left by the context, sampling and stop sequences. */
function basePlan(target: PlanTarget, prompt: number[], request: Pick<ChatRequest, "maxTokens" | "sampling" | "stop">): GenerationPlan {
  checkTokenIds(target, Object.keys(request.sampling?.logitBias ?? {}).map(Number), "logit_bias");
  return {
    modelId: target.modelId,
    prompt,
    maxTokens: fitToContext(target, prompt.length, request.maxTokens),
    sampling: request.sampling,
    stop: request.stop ?? [],
  };
}

/** The rendered prompt's tokens: what `start.inputTokens` reports for the same request. */
export async function tokenizeChat(target: PlanTarget, request: ChatRequest): Promise<number[]> {
  return target.vocabulary.tokenizePrompt((await renderChat(target, request)).pieces);
}

/**
 * The rendered prompt in pieces: the template's markup as control tokens, the client's text (quoted before rendering)
 * as plain text, so a client's `<|im_end|>` is text, never a turn marker. For a reasoning model, also whether the
 * prompt leaves generation inside a `<think>` block.
 */
async function renderChat(target: PlanTarget, request: ChatRequest): Promise<{ pieces: PromptPiece[]; start?: Pick<ReasoningParsing, "insideAtStart" | "midThought"> }> {
  rejectImages(target, request);
  const { template, controlText } = target.vocabulary;
  const prepared = prepareChatPrompt(request, template, controlText.quote);
  const text = await target.vocabulary.renderPrompt(prepared);
  const pieces = controlText.splitPrompt(text);
  if (!targetReasons(target)) return { pieces };
  const insideAtStart = opensReasoning(text.slice(0, text.length - prepared.prefill.length), prepared.prefill);
  return { pieces, start: { insideAtStart, midThought: insideAtStart && !text.trimEnd().endsWith(THINK_OPEN) } };
}

/** Whether the model's output is split into reasoning: as its configuration says, else as its chat template does. */
export function targetReasons(target: PlanTarget): boolean {
  return target.reasoning ?? templateReasons(target.vocabulary.template.source);
}

/**
 * Refuses, before tokenizing, a prompt that cannot fit however it tokenizes: each control token is one token and
 * each plain piece of n bytes at least n / maxTokenBytes tokens.
 */
function rejectUnfit(target: PlanTarget, pieces: readonly PromptPiece[]): void {
  const { maxTokenBytes } = target.vocabulary;
  if (!maxTokenBytes) return;
  const atLeast = pieces.reduce<number>((sum, piece) => sum + (typeof piece === "number" ? 1 : Math.ceil(Buffer.byteLength(piece) / maxTokenBytes)), 0);
  if (atLeast + 1 > target.ctxSize) throw contextOverflow(atLeast, target.ctxSize, { atLeast: true });
}

/** The raw prompt as-is (special tokens recognised), with BOS in front when the model expects one. */
async function tokenizeRaw(target: PlanTarget, text: string): Promise<number[]> {
  const tokens = await tokenizeSpecial(target.vocabulary, text);
  const bos = target.vocabulary.prependBos;
  return bos !== undefined && tokens[0] !== bos ? [bos, ...tokens] : tokens;
}

/** Fill-in-the-middle in prefix-suffix-middle order, as llama.cpp's server builds it. */
async function tokenizeInfill(target: PlanTarget, prefix: string, suffix: string): Promise<number[]> {
  const markers = target.vocabulary.infill;
  if (!markers) throw new EngineError("invalid_request", `suffix: model ${target.modelId} does not support fill-in-the-middle`, { param: "suffix" });
  const [before, after] = [await tokenizeSpecial(target.vocabulary, prefix), await tokenizeSpecial(target.vocabulary, suffix)];
  return [markers.prefix, ...before, markers.suffix, ...after, markers.middle];
}

/** A raw prompt with its control-token texts recognised (a completion prompt is the client's own markup). */
function tokenizeSpecial(vocabulary: Vocabulary, text: string): Promise<number[]> {
  return vocabulary.tokenizePrompt(vocabulary.controlText.splitPrompt(text));
}

/** Token ids a client sent must exist in the vocabulary (llama.cpp aborts the process on any other). */
export function checkTokenIds(target: PlanTarget, tokens: readonly number[], param: string): void {
  const bad = tokens.find((token) => !Number.isInteger(token) || token < 0 || token >= target.vocabulary.size);
  if (bad !== undefined) {
    throw new EngineError("invalid_request", `${param}: token id ${bad} is outside the vocabulary of ${target.modelId} (0…${target.vocabulary.size - 1})`, { param });
  }
}

/** Refuses a prompt that leaves no room to generate; clamps the output budget to the context left. */
function fitToContext(target: PlanTarget, promptTokens: number, maxTokens: number): number {
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new EngineError("invalid_request", "max_tokens: must be a positive integer", { param: "max_tokens" });
  }
  if (promptTokens + 1 > target.ctxSize) throw contextOverflow(promptTokens, target.ctxSize);
  return Math.min(maxTokens, target.ctxSize - promptTokens);
}

/** No local backend has vision yet: an image anywhere in the conversation is a client error naming where it is. */
function rejectImages(target: PlanTarget, request: ChatRequest): void {
  request.messages.forEach((message, m) => {
    const p = message.parts.findIndex((part) => part.type === "image");
    if (p >= 0) throw new EngineError("invalid_request", `messages.${m}.content.${p}: model ${target.modelId} does not accept images`, { param: `messages.${m}.content.${p}` });
  });
}

/** The offered tools as the output parser reads them: names, and parameter names from each input schema. */
function toToolParsing(tools: readonly ToolSpec[], parallel: boolean): ToolParsing {
  return { names: tools.map((tool) => tool.name), shapes: tools.map((tool) => toToolShape(tool.name, tool.inputSchema)), parallel };
}
