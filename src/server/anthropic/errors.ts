/**
 * EngineError → Anthropic error response: one table of code → (HTTP status, `error.type`).
 * @see https://docs.claude.com/en/api/errors
 */
import type { EngineError, EngineErrorCode } from "../../engine/index.js";

/** The `error.type` values of the Anthropic API that kiln emits. */
export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

const TABLE: Record<EngineErrorCode, [number, AnthropicErrorType]> = {
  invalid_request: [400, "invalid_request_error"],
  context_overflow: [400, "invalid_request_error"],
  authentication: [401, "authentication_error"],
  permission: [403, "permission_error"],
  not_found: [404, "not_found_error"],
  request_too_large: [413, "request_too_large"],
  unsupported_media_type: [415, "invalid_request_error"],
  headers_too_large: [431, "invalid_request_error"],
  rate_limited: [429, "rate_limit_error"],
  // 499: the client closed the request; nobody reads this answer, the status only shows up in logs.
  aborted: [499, "api_error"],
  backend_failure: [500, "api_error"],
  internal: [500, "api_error"],
  overloaded: [529, "overloaded_error"],
};

/** HTTP status and Anthropic error type for an engine error code. */
export function mapAnthropicError(code: EngineErrorCode): { status: number; type: AnthropicErrorType } {
  const [status, type] = TABLE[code] ?? TABLE.internal;
  return { status, type };
}

/** The `{type:"error", error:{type,message}}` body, as sent in JSON and in the in-band SSE `error` event. */
export function toErrorBody(error: EngineError): { type: "error"; error: { type: AnthropicErrorType; message: string } } {
  return { type: "error", error: { type: mapAnthropicError(error.code).type, message: error.message } };
}

/**
 * The HTTP error response. 4xx carry `x-should-retry: false` (the SDKs and Claude Code would otherwise retry
 * some of them); 429/529 carry `retry-after` and `x-should-retry: true` because waiting helps.
 */
export function anthropicErrorResponse(error: EngineError, requestId: string): Response {
  const { status } = mapAnthropicError(error.code);
  const headers = new Headers({ "content-type": "application/json" });
  if (status === 429 || status === 529) {
    headers.set("retry-after", String(Math.max(1, Math.ceil(error.details.retryAfter ?? 1))));
    headers.set("x-should-retry", "true");
  } else if (status >= 400 && status < 500) {
    headers.set("x-should-retry", "false");
  }
  return new Response(JSON.stringify({ ...toErrorBody(error), request_id: requestId }), { status, headers });
}
