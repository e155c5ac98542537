/** Reports usage and time to first token of a generation to the response record (request logs, metrics). */
import type { EngineError, GenerationEvent, Usage } from "../engine/index.js";
import type { RequestContext } from "./context.js";

/**
 * Passes every event through, reporting the first delta's latency and the final usage on the way. Generations of one
 * request (n choices, several prompts) share `totals`, so the record holds the sum of what the engine did.
 */
export async function* observeEvents(ctx: RequestContext, events: AsyncIterable<GenerationEvent>, totals: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 }): AsyncGenerator<GenerationEvent> {
  const started = ctx.now();
  let first = true;
  for await (const event of events) {
    if (first && event.type.endsWith("-delta")) {
      first = false;
      ctx.report?.({ timeToFirstTokenMs: ctx.now() - started });
    }
    if (event.type === "error") ctx.report?.({ error: describeFailure(event.error) });
    if (event.type === "finish") {
      totals.inputTokens += event.usage.inputTokens;
      totals.cachedInputTokens += event.usage.cachedInputTokens;
      totals.outputTokens += event.usage.outputTokens;
      totals.cacheTier ??= event.usage.cacheTier;
      ctx.report?.({ ...totals });
    }
    yield event;
  }
}

/** A failure as the request log records it. */
export function describeFailure(error: EngineError): string {
  return `${error.code}: ${error.message}`;
}
