/**
 * What the three OpenAI route handlers share: resolving the model, starting generations under "pull the first
 * event, then commit headers" (errors before generation starts reach app.ts as thrown EngineErrors with a real HTTP
 * status; later ones travel in-band), collecting them, and the SSE response.
 */
import { collectResult, EngineError, type ChatResult, type GenerationEvent, type ModelInfo } from "../../engine/index.js";
import type { RequestContext } from "../context.js";
import { pullFirst } from "../respond.js";
import { createSseResponse, formatSseComment } from "../sse.js";
import type { ChatRequestDraft } from "./wire/request-fields.js";

/**
 * Resolves the model (404 model_not_found in OpenAI's words), fills the default output cap — the rest of the
 * model's context window, which the engine clips to what the prompt leaves — and pulls the first event.
 */
export async function startGeneration(ctx: RequestContext, draft: ChatRequestDraft): Promise<AsyncIterable<GenerationEvent>> {
  const model = requireModel(ctx, draft.model);
  const request = { ...draft, maxTokens: draft.maxTokens ?? model.contextSize };
  const [events] = await startChoices(ctx, [request], (r, options) => ctx.engine.generate(r, options));
  return events!();
}

/**
 * One lazily started generation per choice (all observed into the request's one record). The first is pulled at
 * once, so an error before it starts is still a real HTTP status; the others start when the choice before them ended.
 */
export async function startChoices<R extends { metadata?: Record<string, string> }>(
  ctx: RequestContext,
  requests: R[],
  run: (request: R, options: { signal: AbortSignal }) => AsyncIterable<GenerationEvent>,
): Promise<Array<() => AsyncIterable<GenerationEvent>>> {
  const metadata = { requestId: ctx.requestId, keyId: ctx.principal.keyId };
  const start = (request: R) => run({ ...request, metadata }, { signal: ctx.signal });
  const first = await pullFirst(start(requests[0]!));
  return requests.map((request, i) => (i === 0 ? () => first : () => start(request)));
}

/** The non-streaming path: each choice collected in turn. */
export async function collectChoices(choices: Array<() => AsyncIterable<GenerationEvent>>): Promise<ChatResult[]> {
  const results: ChatResult[] = [];
  for (const choice of choices) results.push(await collectResult(choice()));
  return results;
}

/** The model a request names, resolved by id or alias; 404 model_not_found when there is none. */
export function requireModel(ctx: RequestContext, id: string): ModelInfo {
  const model = ctx.engine.findModel(id);
  if (!model) throw new EngineError("not_found", `The model '${id}' does not exist`, { param: "model", model: id });
  return model;
}

/**
 * The SSE response of OpenAI streams. Heartbeats are comments that do not start with ": ping" (Continue's reader
 * treats that as the end), unless the API has its own (`keepAlive`).
 */
export function streamResponse(frames: AsyncIterable<string>, keepAlive: string | (() => string) = formatSseComment("keep-alive")): Response {
  return createSseResponse(frames, { keepAlive });
}

/** `created`: Unix seconds from the request's injectable clock. */
export function unixSeconds(ctx: RequestContext): number {
  return Math.floor(ctx.now() / 1000);
}
