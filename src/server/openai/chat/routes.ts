/** POST /v1/chat/completions (https://platform.openai.com/docs/api-reference/chat/create). */
import type { RequestContext, RouteInput } from "../../context.js";
import { jsonResponse } from "../../respond.js";
import { collectChoices, requireModel, startChoices, streamResponse, unixSeconds } from "../start-choices.js";
import { toChoiceRequests } from "../wire/choices.js";
import { fromChatCompletionRequest } from "./request.js";
import { toChatCompletion } from "./response.js";
import { ChatKeepAlive, encodeChatCompletionStream } from "./stream.js";

/** Translates the body, runs `n` choices one after another, and answers with a chat.completion or its chunks. */
export async function handleChatCompletions(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromChatCompletionRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  const model = requireModel(ctx, call.request.model);
  const request = { ...call.request, maxTokens: call.request.maxTokens ?? model.contextSize };
  const choices = await startChoices(ctx, toChoiceRequests(request, call.n), (r, options) => ctx.engine.generate(r, options));
  const meta = { id: ctx.ids("chatcmpl-"), created: unixSeconds(ctx), model: call.request.model, logprobs: request.logprobs !== undefined };
  if (!call.stream) return jsonResponse(toChatCompletion(await collectChoices(choices), meta));
  const streamOptions = { ...meta, includeUsage: call.includeUsage };
  const keepAlive = new ChatKeepAlive(streamOptions);
  return streamResponse(encodeChatCompletionStream(choices, { ...streamOptions, keepAlive }), () => keepAlive.frame());
}
