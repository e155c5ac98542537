/**
 * GET /v1/models and /v1/models/:id, shared by both surfaces: one body that the Anthropic SDKs (type, display_name,
 * created_at, has_more/first_id/last_id cursors) and the OpenAI SDK (object, created, owned_by) both parse, with
 * the context window under the names clients read (max_input_tokens, context_length, max_model_len).
 * @see https://docs.claude.com/en/api/models-list
 * @see https://platform.openai.com/docs/api-reference/models
 */
import { EngineError, type ModelInfo } from "../engine/index.js";
import { withUnversionedPaths, type RequestContext, type RouteDef, type RouteInput } from "./context.js";
import { allowsModel } from "./model-scope.js";
import { jsonResponse } from "./respond.js";

/** One model in both vendors' shapes. */
export interface ModelItem {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  type: "model";
  display_name: string;
  created_at: string;
  max_input_tokens: number;
  max_tokens: number;
  context_length: number;
  max_model_len: number;
  /** kiln's own: which backend serves the model ("llama-cpp", "remote"…). */
  backend: string;
  /** kiln's own: ModelInfo.details (file facts; for remote models, each replica's live state). */
  details?: Record<string, unknown>;
}

/** The shared model routes (no surface of their own: errors take the caller's shape, see app.ts). */
export function createModelRoutes(): RouteDef[] {
  return withUnversionedPaths([
    { method: "GET", path: "/v1/models", auth: true, handler: listModels },
    { method: "GET", path: "/v1/models/:id", auth: true, handler: retrieveModel },
  ]);
}

/** Renders one model. */
export function toModelItem(info: ModelInfo): ModelItem {
  return {
    id: info.id,
    object: "model",
    created: info.created,
    owned_by: info.ownedBy,
    type: "model",
    display_name: info.id,
    created_at: new Date(info.created * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    max_input_tokens: info.contextSize,
    max_tokens: info.contextSize,
    context_length: info.contextSize,
    max_model_len: info.contextSize,
    backend: info.backend,
    ...(info.details ? { details: info.details } : {}),
  };
}

async function listModels(ctx: RequestContext, input: RouteInput): Promise<Response> {
  // The request's engine lists only the models the caller's key may use.
  const all = ctx.engine.listModels().map(toModelItem);
  const page = paginate(all, input.query);
  // An empty `models` array keeps clients that expect a catalog under that key quiet (OpenAI's list has only
  // `data`: https://platform.openai.com/docs/api-reference/models/list).
  return jsonResponse({
    object: "list",
    data: page.items,
    has_more: page.hasMore,
    first_id: page.items[0]?.id ?? null,
    last_id: page.items.at(-1)?.id ?? null,
    models: [],
  });
}

async function retrieveModel(ctx: RequestContext, input: RouteInput): Promise<Response> {
  const id = input.params.id ?? "";
  const info = ctx.engine.findModel(id);
  if (!info || !allowsModel(ctx.principal.models, info)) {
    throw new EngineError("not_found", `model: ${id}`, { param: "model", model: id, code: "model_not_found" });
  }
  return jsonResponse(toModelItem(info));
}

/**
 * Anthropic cursors: `after_id` pages forward, `before_id` backward, `limit` 1–1000. Without `limit` every model is
 * returned (OpenAI clients never page), so `has_more` is then always false.
 */
export function paginate<T extends { id: string }>(items: T[], query: URLSearchParams): { items: T[]; hasMore: boolean } {
  const limit = clampLimit(query.get("limit"), items.length);
  const after = query.get("after_id");
  const before = query.get("before_id");
  if (before) {
    const end = Math.max(0, items.findIndex((item) => item.id === before));
    const start = Math.max(0, end - limit);
    return { items: items.slice(start, end), hasMore: start > 0 };
  }
  const start = after ? items.findIndex((item) => item.id === after) + 1 : 0;
  const slice = start > 0 || !after ? items.slice(start, start + limit) : [];
  return { items: slice, hasMore: start + limit < items.length && slice.length > 0 };
}

function clampLimit(raw: string | null, fallback: number): number {
  const value = Number(raw);
  if (raw === null || !Number.isFinite(value)) return Math.max(1, fallback);
  return Math.min(1000, Math.max(1, Math.floor(value)));
}
