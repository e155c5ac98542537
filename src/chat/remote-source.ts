/**
 * A chat source backed by a running server: `kiln serve` or any Anthropic Messages / OpenAI chat completions
 * endpoint. OpenAI-compatible servers are reached through the engine's remote model, the same client `kiln serve`
 * uses for remote replicas; Anthropic streams are read back by from-anthropic-stream.ts.
 */
import { createEngine, EngineError, type Engine, type EngineErrorCode, type ChatRequest, type Message, type GenerationEvent } from "../engine/index.js";
import { readSse } from "../lib/read-sse.js";
import type { ChatSource, SourceModel } from "./chat-source.js";
import { createAnthropicStreamReader } from "./from-anthropic-stream.js";

export type RemoteApi = "anthropic" | "openai";

export interface RemoteSourceOptions {
  /** Server root, with or without a trailing `/v1`. */
  url: string;
  apiKey?: string;
  api: RemoteApi;
  /** Model id; when absent, the first one the server lists. */
  model?: string;
}

/** Connects to the server (listing its models) and returns a source for the chosen model. */
export async function createRemoteSource(options: RemoteSourceOptions): Promise<ChatSource> {
  const base = options.url.replace(/\/+$/, "").replace(/\/v1$/, "");
  const headers = authHeaders(options);
  let model = await findModel(base, headers, options.model);
  const openModel = (found: SourceModel) => options.api === "openai" ? openOpenAiModel(base, options.apiKey, found) : undefined;
  let openai = await openModel(model);
  return {
    get model() {
      return model;
    },
    generate: (request, signal) => openai
      ? openai.generate({ ...request, model: model.id }, { signal })
      : streamMessages(base, headers, request, signal),
    async switchModel(ref) {
      const found = await findModel(base, headers, ref);
      const next = await openModel(found);
      await openai?.close();
      [model, openai] = [found, next];
      return model;
    },
    close: async () => openai?.close(),
  };
}

/** The server as a one-replica remote model: its errors, tool calls and usage read as `kiln serve` reads them. */
function openOpenAiModel(base: string, apiKey: string | undefined, model: SourceModel): Promise<Engine> {
  return createEngine({ models: [], remoteModels: [{ id: model.id, replicas: [{ url: `${base}/v1`, apiKey }], contextSize: model.contextSize }] });
}

function authHeaders(options: RemoteSourceOptions): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.api === "anthropic") headers["anthropic-version"] = "2023-06-01";
  if (options.apiKey) {
    if (options.api === "anthropic") headers["x-api-key"] = options.apiKey;
    else headers.authorization = `Bearer ${options.apiKey}`;
  }
  return headers;
}

/** The model entry from GET /v1/models; its context size from whichever field the server fills. */
async function findModel(base: string, headers: Record<string, string>, wanted: string | undefined): Promise<SourceModel> {
  const listed = await fetchModels(base, headers).catch((error: unknown) => {
    if (wanted) return [];
    throw error;
  });
  const entry = wanted ? listed.find((model) => model.id === wanted) : listed[0];
  if (!entry && !wanted) throw new EngineError("not_found", `the server at ${base} lists no models`);
  const contextSize = entry?.context_length ?? entry?.max_model_len ?? entry?.max_input_tokens ?? entry?.meta?.n_ctx;
  return { id: wanted ?? String(entry?.id), contextSize: typeof contextSize === "number" ? contextSize : undefined };
}

async function fetchModels(base: string, headers: Record<string, string>): Promise<Array<Record<string, any>>> {
  const response = await send(`${base}/v1/models`, { headers });
  const body = (await response.json()) as { data?: unknown };
  return Array.isArray(body.data) ? body.data : [];
}

async function* streamMessages(base: string, headers: Record<string, string>, request: ChatRequest, signal: AbortSignal): AsyncGenerator<GenerationEvent> {
  const response = await send(`${base}/v1/messages`, { method: "POST", headers, body: JSON.stringify(toMessagesBody(request)), signal });
  if (!response.body) throw new EngineError("backend_failure", "the server sent an empty response");
  const read = createAnthropicStreamReader();
  for await (const sse of readSse(response.body)) if (sse.data) yield* read(JSON.parse(sse.data));
}

/** fetch that turns connection failures and error statuses into EngineErrors with the server's message. */
async function send(url: string, init: RequestInit): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    throw new EngineError("backend_failure", `cannot reach ${url}: ${cause}`, {}, { cause: error });
  }
  if (response.ok) return response;
  const text = await response.text();
  let message = text.slice(0, 300);
  try {
    message = JSON.parse(text)?.error?.message ?? message;
  } catch {
    // Not JSON: keep the start of the body.
  }
  throw new EngineError(codeOfStatus(response.status), `${response.status} from ${url}: ${message}`);
}

function codeOfStatus(status: number): EngineErrorCode {
  const codes: Record<number, EngineErrorCode> = { 400: "invalid_request", 401: "authentication", 403: "permission", 404: "not_found", 413: "request_too_large", 429: "rate_limited", 503: "overloaded", 529: "overloaded" };
  return codes[status] ?? "backend_failure";
}

function textOf(message: Message): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** https://docs.anthropic.com/en/api/messages */
function toMessagesBody(request: ChatRequest): Record<string, unknown> {
  const { sampling = {} } = request;
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    ...(request.system ? { system: request.system } : {}),
    messages: request.messages.map((message) => ({ role: message.role, content: textOf(message) })),
    stream: true,
    ...(sampling.temperature !== undefined ? { temperature: sampling.temperature } : {}),
    ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
    ...(sampling.topK !== undefined ? { top_k: sampling.topK } : {}),
    ...(request.stop?.length ? { stop_sequences: request.stop } : {}),
  };
}
