/**
 * Caps on the size of a conversation, checked before the engine renders or tokenizes anything, so one enormous
 * request is refused at once instead of occupying the server. The body's byte size is capped earlier, while it is
 * read, and a large body is first counted as sent, off the event loop (read-json-body.ts).
 */
import { type Engine, EngineError, type ChatRequest } from "../engine/index.js";
import { lazyIterable } from "../lib/lazy-iterable.js";

/** How large one conversation may be (`kiln serve --max-messages`, `--max-blocks`). */
export interface InputLimits {
  /** Messages per request (Responses: input items that become messages). */
  maxMessages: number;
  /** Content blocks per request: the parts of every message plus the tool definitions. */
  maxBlocks: number;
}

export const DEFAULT_INPUT_LIMITS: InputLimits = { maxMessages: 10_000, maxBlocks: 50_000 };

/** Refuses chat requests over the limits, for generation and token counting alike. */
export function withInputLimits(engine: Engine, limits: InputLimits): Engine {
  return {
    ...engine,
    generate: (request, options) => checked(request, limits, () => engine.generate(request, options)),
    countTokens: async (request) => {
      checkInputLimits(request, limits);
      return engine.countTokens(request);
    },
    complete: (request, options) => engine.complete(request, options),
    listModels: () => engine.listModels(),
    findModel: (id) => engine.findModel(id),
    stats: () => engine.stats(),
    close: () => engine.close(),
  };
}

/** The stream of `run()` once the request passed the check; a refusal rejects the first `next()`. */
function checked<T>(request: ChatRequest, limits: InputLimits, run: () => AsyncIterable<T>): AsyncIterable<T> {
  return lazyIterable(() => {
    checkInputLimits(request, limits);
    return run();
  });
}

/** Throws a 400 naming the limit when the request exceeds one. */
export function checkInputLimits(request: ChatRequest, limits: InputLimits): void {
  const blocks = request.messages.reduce((sum, message) => sum + message.parts.length, request.tools?.length ?? 0);
  checkInputCounts({ messages: request.messages.length, blocks }, limits);
}

/** A conversation's size: its messages, and its content blocks (message parts plus tools). */
export interface InputCounts {
  messages: number;
  blocks: number;
}

/** Throws a 400 naming the limit when `counts` exceed one. */
export function checkInputCounts({ messages, blocks }: InputCounts, limits: InputLimits): void {
  if (messages > limits.maxMessages) {
    throw new EngineError("invalid_request", `messages: ${messages} messages exceed this server's limit of ${limits.maxMessages} per request`, { param: "messages" });
  }
  if (blocks > limits.maxBlocks) {
    throw new EngineError("invalid_request", `messages: ${blocks} content blocks (message parts and tools) exceed this server's limit of ${limits.maxBlocks} per request`, { param: "messages" });
  }
}

/**
 * The counts of a body as sent, before any validation or translation: the entries of `messages` (Messages, chat
 * completions) or `input` (Responses) that are objects, but system and developer ones (they become the system text), their content
 * parts (a string is one) and the tools. Self-contained, because a worker thread runs its source too
 * (body-count-thread.ts).
 */
export function countSentInput(body: unknown): InputCounts {
  const record = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null ? value as Record<string, unknown> : {});
  const fields = record(body);
  const list = Array.isArray(fields.messages) ? fields.messages : Array.isArray(fields.input) ? fields.input : [];
  let messages = 0;
  let blocks = Array.isArray(fields.tools) ? fields.tools.length : 0;
  for (const entry of list) {
    // Conversation entries are objects; the strings or token ids of other `input`s (embeddings) are no messages.
    if (typeof entry !== "object" || entry === null) continue;
    const { role, content } = record(entry);
    if (role === "system" || role === "developer") continue;
    messages++;
    blocks += Array.isArray(content) ? content.length : 1;
  }
  return { messages, blocks };
}
