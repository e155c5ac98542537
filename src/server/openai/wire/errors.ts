/**
 * OpenAI error shape and the one table EngineError code → (HTTP status, `type`, `code`).
 * See https://platform.openai.com/docs/guides/error-codes.
 */
import { EngineError, type EngineErrorCode } from "../../../engine/index.js";
import { formatSseEvent } from "../../sse.js";

/** The body every OpenAI error carries: `{"error":{message,type,param,code}}`. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A rendered error: status, body and the headers that steer client retries. */
export interface OpenAIErrorParts {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
}

interface TableRow { status: number; type: string; code: string | null; retryable: boolean }

const TABLE: Record<EngineErrorCode, TableRow> = {
  invalid_request: { status: 400, type: "invalid_request_error", code: null, retryable: false },
  authentication: { status: 401, type: "invalid_request_error", code: "invalid_api_key", retryable: false },
  permission: { status: 403, type: "permission_error", code: null, retryable: false },
  not_found: { status: 404, type: "invalid_request_error", code: null, retryable: false },
  context_overflow: { status: 400, type: "invalid_request_error", code: "context_length_exceeded", retryable: false },
  rate_limited: { status: 429, type: "requests", code: "rate_limit_exceeded", retryable: true },
  overloaded: { status: 503, type: "server_error", code: "server_is_overloaded", retryable: true },
  request_too_large: { status: 413, type: "invalid_request_error", code: "request_too_large", retryable: false },
  unsupported_media_type: { status: 415, type: "invalid_request_error", code: "unsupported_media_type", retryable: false },
  headers_too_large: { status: 431, type: "invalid_request_error", code: "request_header_fields_too_large", retryable: false },
  aborted: { status: 499, type: "invalid_request_error", code: "request_aborted", retryable: false },
  backend_failure: { status: 500, type: "server_error", code: null, retryable: true },
  internal: { status: 500, type: "server_error", code: null, retryable: false },
};

/** Maps an EngineError to OpenAI's status, body and retry headers. */
export function toOpenAIError(error: EngineError): OpenAIErrorParts {
  const row = TABLE[error.code] ?? TABLE.internal;
  const body: OpenAIErrorBody = {
    error: { message: describeError(error), type: row.type, param: paramOf(error), code: codeOf(error, row) },
  };
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterOf(error);
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  // Tells the openai SDK not to retry what will fail the same way again (https://github.com/openai/openai-node#retries).
  if (!row.retryable) headers["x-should-retry"] = "false";
  return { status: row.status, body, headers };
}

/** The `{"error":…}` object alone, for in-band stream errors. */
export function toOpenAIErrorBody(error: EngineError): OpenAIErrorBody {
  return toOpenAIError(error).body;
}

/** The in-band error of chat and legacy completion streams: one unnamed `data: {"error":…}` frame. */
export function toOpenAIErrorFrames(error: EngineError): string[] {
  return [formatSseEvent(undefined, toOpenAIErrorBody(error))];
}

/** Renders an EngineError as a JSON Response in OpenAI's shape. */
export function openAIErrorResponse(error: EngineError, requestId: string): Response {
  const { status, body, headers } = toOpenAIError(error);
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": requestId, ...headers },
  });
}

/** OpenAI's own wording where clients match on it (model_not_found, context_length_exceeded, rate limits). */
function describeError(error: EngineError): string {
  const { details } = error;
  if (error.code === "not_found" && typeof details.model === "string") {
    return `The model \`${details.model}\` does not exist or you do not have access to it.`;
  }
  if (error.code === "context_overflow" && details.promptTokens !== undefined && details.contextSize !== undefined) {
    return `This model's maximum context length is ${details.contextSize} tokens. However, your ${
      isPromptParam(error) ? "prompt" : "messages"
    } resulted in ${details.promptTokens} tokens. Please reduce the length of the ${isPromptParam(error) ? "prompt" : "messages"}.`;
  }
  if (error.code === "rate_limited") {
    const seconds = retryAfterOf(error) ?? 1;
    return /try again in/i.test(error.message) ? error.message : `${trimDot(error.message)}. Please try again in ${seconds}s.`;
  }
  return error.message;
}

function codeOf(error: EngineError, row: TableRow): string | null {
  if (typeof error.details.code === "string") return error.details.code;
  if (error.code === "not_found" && (typeof error.details.model === "string" || error.details.param === "model")) return "model_not_found";
  if (error.code === "authentication" && error.details.missing === true) return null;
  return row.code;
}

function paramOf(error: EngineError): string | null {
  if (error.details.param) return error.details.param;
  if (error.code === "context_overflow") return "messages";
  return null;
}

function isPromptParam(error: EngineError): boolean {
  return error.details.param === "prompt" || error.details.param === "input";
}

/** Whole seconds, rounded up, so `retry-after` is an integer as Continue and Zed expect. */
function retryAfterOf(error: EngineError): number | undefined {
  const seconds = error.details.retryAfter;
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) {
    return error.code === "overloaded" || error.code === "rate_limited" ? 1 : undefined;
  }
  return Math.max(1, Math.ceil(seconds));
}

function trimDot(text: string): string {
  return text.replace(/\.\s*$/, "");
}
