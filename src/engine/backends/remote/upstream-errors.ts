/** Maps an upstream HTTP failure to an EngineError: its 4xx stay client errors, its 5xx and timeouts are retryable. */
import { EngineError } from "../../../errors/engine-error.js";

/** Reads the upstream's error body (OpenAI or Anthropic shape, or text) and maps its status. */
export async function fromUpstreamResponse(response: Response, url: string): Promise<EngineError> {
  const text = await response.text().catch(() => "");
  const message = errorMessageOf(text) || `${response.status} ${response.statusText}`;
  const retryAfter = Number(response.headers.get("retry-after")) || 1;
  const status = response.status;
  if (status === 400 || status === 422) {
    const overflow = /context|too long|maximum context/i.test(message);
    return new EngineError("invalid_request", message, overflow ? { upstreamCode: "context_length_exceeded" } : {});
  }
  if (status === 413) return new EngineError("request_too_large", message);
  // Mostly a model the upstream does not serve (a name that differs from kiln's): the client's not-found, never a 500.
  if (status === 404) return new EngineError("not_found", `upstream ${url}: ${message}`, { param: "model" });
  if (status === 429) return new EngineError("rate_limited", `upstream rate limit: ${message}`, { retryAfter });
  if (status >= 500) return new EngineError("overloaded", `upstream ${url} failed with ${status}: ${message}`, { retryAfter, upstreamStatus: status });
  return new EngineError("backend_failure", `upstream ${url} refused the request with ${status}: ${message}`, { upstreamStatus: status });
}

function errorMessageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    if (typeof body.error === "string") return body.error;
    return body.error?.message ?? body.message ?? text;
  } catch {
    return text.slice(0, 500);
  }
}
