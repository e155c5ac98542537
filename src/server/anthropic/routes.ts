/**
 * Route handlers of the Anthropic Messages surface: validate and translate the body, run the engine, answer with
 * JSON or SSE. Errors before generation starts are thrown as EngineErrors (app.ts renders them with a real HTTP
 * status); errors after the stream began travel in-band as an `error` event.
 * @see https://docs.claude.com/en/api/messages
 */
import { collectResult, type GenerationEvent } from "../../engine/index.js";
import type { RequestContext, RouteInput } from "../context.js";
import { jsonResponse, pullFirst } from "../respond.js";
import { createSseResponse, formatSseEvent } from "../sse.js";
import { guardStream } from "../stream-guard.js";
import { mapStream } from "../../lib/map-stream.js";
import { fromCountTokensRequest, fromMessagesRequest } from "./request.js";
import { toMessage } from "./response.js";
import { checkAnthropicVersion, CountTokensRequestSchema, MessagesRequestSchema, parseRequest } from "./schema.js";
import { createMessagesEncoder, encodeMessagesError } from "./stream.js";
import { withThinkingSignatures } from "./thinking-signature.js";

/** POST /v1/messages (also /messages and any prefixed or `?beta=true` form). */
export async function handleMessages(ctx: RequestContext, input: RouteInput): Promise<Response> {
  checkAnthropicVersion(input.headers.get("anthropic-version"));
  const body = parseRequest(MessagesRequestSchema, input.body);
  const request = { ...fromMessagesRequest(body), metadata: { requestId: ctx.requestId, keyId: ctx.principal.keyId } };
  ctx.report?.({ model: body.model, stream: body.stream === true });
  const events = withThinkingSignatures(await pullFirst(ctx.engine.generate(request, { signal: ctx.signal })));
  const options = { messageId: ctx.ids("msg_"), model: body.model };
  if (!body.stream) return jsonResponse(toMessage(await collectResult(events), { id: options.messageId, model: body.model }));
  const frames = guardStream(encodeFrames(events, createMessagesEncoder(options)), (error) => [encodeMessagesError(error)]);
  return createSseResponse(frames, {
    keepAlive: formatSseEvent("ping", { type: "ping" }),
  });
}

/** POST /v1/messages/count_tokens: the tokens of the rendered prompt, as a Messages call would count them. */
export async function handleCountTokens(ctx: RequestContext, input: RouteInput): Promise<Response> {
  checkAnthropicVersion(input.headers.get("anthropic-version"));
  const body = parseRequest(CountTokensRequestSchema, input.body);
  ctx.report?.({ model: body.model });
  const inputTokens = await ctx.engine.countTokens(fromCountTokensRequest(body));
  return jsonResponse({ input_tokens: inputTokens });
}

/** Each engine event as the SSE text it produces (a failure thrown after the 200 is the stream guard's). */
function encodeFrames(events: AsyncIterable<GenerationEvent>, encode: (event: GenerationEvent) => string): AsyncIterable<string> {
  return mapStream(events, { map: (event) => encode(event) || undefined });
}

