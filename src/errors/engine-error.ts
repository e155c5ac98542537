/** The one error class of the engine. Each surface maps `code` to its HTTP status and vendor error type. */
export type EngineErrorCode =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "context_overflow"
  | "rate_limited"
  | "overloaded"
  | "request_too_large"
  | "unsupported_media_type"
  | "headers_too_large"
  | "aborted"
  | "backend_failure"
  | "internal";

export interface EngineErrorDetails {
  /** JSON path of the offending field, when the error is about one (e.g. "messages.0.content"). */
  param?: string;
  /** context_overflow: tokens of the prompt and the model's limit. */
  promptTokens?: number;
  contextSize?: number;
  /** rate_limited / overloaded: seconds after which a retry can succeed. */
  retryAfter?: number;
  [key: string]: unknown;
}

export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly details: EngineErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "EngineError";
  }
}

/** Wraps anything thrown into an EngineError, keeping EngineErrors as they are. */
export function toEngineError(error: unknown, fallback: EngineErrorCode = "internal"): EngineError {
  if (error instanceof EngineError) return error;
  if (error instanceof Error && error.name === "AbortError") return new EngineError("aborted", "The request was aborted");
  const message = error instanceof Error ? error.message : String(error);
  return new EngineError(fallback, message, {}, { cause: error });
}

/**
 * The context-overflow error, worded as Claude Code's compaction logic expects. `atLeast`: the prompt was refused
 * before tokenizing, on a lower bound of its tokens.
 */
export function contextOverflow(promptTokens: number, contextSize: number, options: { atLeast?: boolean } = {}): EngineError {
  const count = options.atLeast ? `at least ${promptTokens}` : `${promptTokens}`;
  return new EngineError("context_overflow", `prompt is too long: ${count} tokens > ${contextSize} maximum`, { promptTokens, contextSize, ...options });
}
