/** Reports usage and time to first token of a generation to the response record (request logs, metrics). */
import type { GenerationEvent } from "../engine/events.js";
import type { RequestContext } from "./context.js";

/** Passes every event through, reporting the first delta's latency and the final usage on the way. */
export async function* observeEvents(ctx: RequestContext, events: AsyncIterable<GenerationEvent>): AsyncGenerator<GenerationEvent> {
  const started = ctx.now();
  let first = true;
  for await (const event of events) {
    if (first && event.type.endsWith("-delta")) {
      first = false;
      ctx.report?.({ timeToFirstTokenMs: ctx.now() - started });
    }
    if (event.type === "finish") {
      const { inputTokens, cachedInputTokens, cacheTier, outputTokens } = event.usage;
      ctx.report?.({ inputTokens, cachedInputTokens, cacheTier, outputTokens });
    }
    yield event;
  }
}
