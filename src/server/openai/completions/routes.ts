/** POST /v1/completions: raw prompts, no chat template (https://platform.openai.com/docs/api-reference/completions). */
import type { RequestContext, RouteInput } from "../../context.js";
import { jsonResponse } from "../../respond.js";
import { collectChoices, requireModel, startChoices, streamResponse, unixSeconds } from "../start-choices.js";
import { toChoiceRequests } from "../wire/choices.js";
import { fromCompletionRequest } from "./request.js";
import { toTextCompletion } from "./response.js";
import { encodeCompletionStream } from "./stream.js";

/** Translates the body, runs `n` choices per prompt one after another, and answers with a text_completion or its chunks. */
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
