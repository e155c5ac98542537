/** POST /v1/embeddings: one vector per input, through the engine like every generation (scope, limits, usage). */
import type { RequestContext, RouteInput } from "../../context.js";
import { requireModel } from "../start-choices.js";
import { fromEmbeddingRequest } from "./request.js";
import { embeddingListResponse, toEmbeddingList } from "./response.js";

export async function handleEmbeddings(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const { request, encodingFormat } = fromEmbeddingRequest(input.body);
  ctx.report?.({ model: request.model, stream: false });
  requireModel(ctx, request.model);
  const result = await ctx.engine.embed(request, { signal: ctx.signal });
  return embeddingListResponse(toEmbeddingList(result, request.model, encodingFormat));
}
