/**
 * Caps on the size of a conversation, checked before the engine renders or tokenizes anything, so one enormous
 * request is refused at once instead of occupying the server. The body's byte size is capped earlier, while it is
 * read (read-json-body.ts).
 */
import { type Engine, EngineError, type ChatRequest } from "../engine/index.js";

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
async function* checked<T>(request: ChatRequest, limits: InputLimits, run: () => AsyncIterable<T>): AsyncGenerator<T> {
  checkInputLimits(request, limits);
  yield* run();
}

/** Throws a 400 naming the limit when the request exceeds one. */
export function checkInputLimits(request: ChatRequest, limits: InputLimits): void {
  const messages = request.messages.length;
  if (messages > limits.maxMessages) {
    throw new EngineError("invalid_request", `messages: ${messages} messages exceed this server's limit of ${limits.maxMessages} per request`, { param: "messages" });
  }
  const blocks = request.messages.reduce((sum, message) => sum + message.parts.length, request.tools?.length ?? 0);
  if (blocks > limits.maxBlocks) {
    throw new EngineError("invalid_request", `messages: ${blocks} content blocks (message parts and tools) exceed this server's limit of ${limits.maxBlocks} per request`, { param: "messages" });
  }
}
