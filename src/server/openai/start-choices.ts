/**
 * Route handlers of the OpenAI-compatible surface: validate and translate the body, run the engine, and answer
 * with JSON or SSE. "Pull the first event, then commit headers": errors before generation starts reach app.ts as
 * thrown EngineErrors (real HTTP status); later ones travel in-band.
 */
import type { ModelInfo } from "../../engine/backend.js";
import { collectResult, type ChatResult } from "../../engine/collect.js";
import { EngineError } from "../../engine/errors.js";
import type { GenerationEvent } from "../../engine/events.js";
import type { RequestContext, RouteInput } from "../context.js";
import { jsonResponse, pullFirst } from "../respond.js";
import { createSseResponse, formatSseComment } from "../sse.js";
import { toChoiceRequests } from "./choices.js";
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
  const model = requireModel(ctx, call.request.model);
  const request = { ...call.request, maxTokens: call.request.maxTokens ?? model.contextSize };
  const choices = await startChoices(ctx, toChoiceRequests(request, call.n), (r, options) => ctx.engine.generate(r, options));
  const meta = { id: ctx.ids("chatcmpl-"), created: unixSeconds(ctx), model: call.request.model, logprobs: request.logprobs !== undefined };
  if (!call.stream) return jsonResponse(toChatCompletion(await collectChoices(choices), meta));
  return streamResponse(encodeChatCompletionStream(choices, { ...meta, includeUsage: call.includeUsage }));
}

/** POST /v1/completions: raw prompts, no chat template (https://platform.openai.com/docs/api-reference/completions). */
export async function handleCompletions(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromCompletionRequest(input.body);
  const model = call.requests[0]!.model;
  ctx.report?.({ model, stream: call.stream });
  requireModel(ctx, model);
  const requests = call.requests.flatMap((request) => toChoiceRequests(request, call.n));
  const choices = await startChoices(ctx, requests, (r, options) => ctx.engine.complete(r, options));
  const logprobs = call.requests[0]!.logprobs !== undefined;
  const options = { id: ctx.ids("cmpl-"), created: unixSeconds(ctx), model, logprobs, includeUsage: call.includeUsage, perPrompt: call.n };
  if (!call.stream) return jsonResponse(toTextCompletion(await collectChoices(choices), options));
  return streamResponse(encodeCompletionStream(choices, options));
}

/** POST /v1/responses (https://platform.openai.com/docs/api-reference/responses/create). */
export async function handleResponses(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromResponsesRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  const events = await startGeneration(ctx, call.request);
  const meta = { id: ctx.ids("resp_"), created: unixSeconds(ctx), model: call.request.model, ids: ctx.ids, logprobs: call.request.logprobs !== undefined };
  if (!call.stream) return jsonResponse(await collectResponse(events, meta));
  return streamResponse(encodeResponsesStream(events, meta));
}

/**
 * Resolves the model (404 model_not_found in OpenAI's words), fills the default output cap — the rest of the
 * model's context window, which the engine clips to what the prompt leaves — and pulls the first event.
 */
async function startGeneration(ctx: RequestContext, draft: ChatRequestDraft): Promise<AsyncIterable<GenerationEvent>> {
  const model = requireModel(ctx, draft.model);
  const request = { ...draft, maxTokens: draft.maxTokens ?? model.contextSize };
  const [events] = await startChoices(ctx, [request], (r, options) => ctx.engine.generate(r, options));
  return events!();
}

/**
 * One lazily started generation per choice (all observed into the request's one record). The first is pulled at
 * once, so an error before it starts is still a real HTTP status; the others start when the choice before them ended.
 */
async function startChoices<R extends { metadata?: Record<string, string> }>(
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
async function collectChoices(choices: Array<() => AsyncIterable<GenerationEvent>>): Promise<ChatResult[]> {
  const results: ChatResult[] = [];
  for (const choice of choices) results.push(await collectResult(choice()));
  return results;
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
