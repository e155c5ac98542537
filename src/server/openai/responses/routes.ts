/** POST /v1/responses (https://platform.openai.com/docs/api-reference/responses/create). */
import type { RequestContext, RouteInput } from "../../context.js";
import { jsonResponse } from "../../respond.js";
import { startGeneration, streamResponse, unixSeconds } from "../start-choices.js";
import { fromResponsesRequest } from "./request.js";
import { collectResponse, encodeResponsesStream } from "./stream.js";

/** Translates the body, runs one generation, and answers with the response object or its stream events. */
export async function handleResponses(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const call = fromResponsesRequest(input.body);
  ctx.report?.({ model: call.request.model, stream: call.stream });
  const events = await startGeneration(ctx, call.request);
  const meta = { id: ctx.ids("resp_"), created: unixSeconds(ctx), model: call.request.model, ids: ctx.ids, logprobs: call.request.logprobs !== undefined };
  if (!call.stream) return jsonResponse(await collectResponse(events, meta));
  return streamResponse(encodeResponsesStream(events, meta));
}
