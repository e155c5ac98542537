/**
 * Route handlers of the OpenAI-compatible surface: validate and translate the body, run the engine, and answer
 * with JSON or SSE. "Pull the first event, then commit headers": errors before generation starts reach app.ts as
 * thrown EngineErrors (real HTTP status); later ones travel in-band.
 */
import { observeEvents } from "../observe-events.js";
import type { ModelInfo } from "../../engine/backend.js";
import { collectResult } from "../../engine/collect.js";
import { EngineError } from "../../engine/errors.js";
import type { GenerationEvent } from "../../engine/events.js";
import type { RequestContext, RouteInput } from "../context.js";
import { jsonResponse, pullFirst } from "../respond.js";
import { createSseResponse, formatSseComment } from "../sse.js";
import { fromCompletionRequest } from "./completions-request.js";
import { encodeCompletionStream, toTextCompletion } from "./completions-response.js";
import { fromChatCompletionRequest, type ChatRequestDraft } from "./request.js";
import { toChatCompletion } from "./response.js";
import { fromResponsesRequest } from "./responses-request.js";
import { collectResponse, encodeResponsesStream } from "./responses-stream.js";
import { encodeChatCompletionStream } from "./stream.js";

/** POST /v1/chat/completions (https://platform.openai.com/docs/api-reference/chat/create). */
export async function handleChatCompletions(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromChatCompletionRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  const events = await startGeneration(ctx, call.request);
  const meta = { id: ctx.ids("chatcmpl-"), created: unixSeconds(ctx), model: call.request.model };
  if (!call.stream) return jsonResponse(toChatCompletion(await collectResult(events), meta));
  return streamResponse(encodeChatCompletionStream(events, { ...meta, includeUsage: call.includeUsage }));
}

/** POST /v1/completions: raw prompt, no chat template (https://platform.openai.com/docs/api-reference/completions). */
export async function handleCompletions(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromCompletionRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  requireModel(ctx, call.request.model);
  const request = { ...call.request, metadata: { requestId: ctx.requestId, keyId: ctx.principal.keyId } };
  const events = observeEvents(ctx, await pullFirst(ctx.engine.complete(request, { signal: ctx.signal })));
  const options = {
    id: ctx.ids("cmpl-"),
    created: unixSeconds(ctx),
    model: call.request.model,
    ...(call.echo ? { echoPrompt: call.request.prompt } : {}),
    logprobs: (call.request.logprobs ?? 0) > 0,
    includeUsage: call.includeUsage,
  };
  if (!call.stream) return jsonResponse(toTextCompletion(await collectResult(events), options));
  return streamResponse(encodeCompletionStream(events, options));
}

/** POST /v1/responses (https://platform.openai.com/docs/api-reference/responses/create). */
export async function handleResponses(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromResponsesRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  const events = await startGeneration(ctx, call.request);
  const meta = { id: ctx.ids("resp_"), created: unixSeconds(ctx), model: call.request.model, ids: ctx.ids };
  if (!call.stream) return jsonResponse(await collectResponse(events, meta));
  return streamResponse(encodeResponsesStream(events, meta));
}

/**
 * Resolves the model (404 model_not_found in OpenAI's words), fills the default output cap — the rest of the
 * model's context window, which the engine clips to what the prompt leaves — and pulls the first event.
 */
async function startGeneration(ctx: RequestContext, draft: ChatRequestDraft): Promise<AsyncIterable<GenerationEvent>> {
  const model = requireModel(ctx, draft.model);
  const request = { ...draft, maxTokens: draft.maxTokens ?? model.contextSize, metadata: { requestId: ctx.requestId, keyId: ctx.principal.keyId } };
  return observeEvents(ctx, await pullFirst(ctx.engine.generate(request, { signal: ctx.signal })));
}

function requireModel(ctx: RequestContext, id: string): ModelInfo {
  const model = ctx.engine.findModel(id);
  if (!model) throw new EngineError("not_found", `The model '${id}' does not exist`, { param: "model", model: id });
  return model;
}

// Heartbeats are comments that do not start with ": ping" (Continue's reader treats that as the end).
function streamResponse(frames: AsyncIterable<string>): Response {
  return createSseResponse(frames, { keepAlive: formatSseComment("keep-alive") });
}

function unixSeconds(ctx: RequestContext): number {
  return Math.floor(ctx.now() / 1000);
}
