/**
 * A model served by remote OpenAI-compatible engines (vLLM, SGLang, llama-server, other kiln hosts), behind the
 * same LoadedModel interface as a local model: both kiln surfaces, tools, stop sequences and usage work the same.
 */
import type { GenerateOptions, LoadedModel, ModelInfo } from "../../backend.js";
import type { GenerationEvent } from "../../events.js";
import type { ChatRequest, CompletionRequest } from "../../messages.js";
import { toUnitLength, type EmbeddingRequest, type EmbeddingResult } from "../../embeddings.js";
import { EngineError } from "../../../errors/engine-error.js";
import type { RemoteModelSpec, ReplicaSpec } from "../../model-specs.js";
import { ReplicaPool, type Replica } from "./replica-pool.js";
import { toUpstreamChatBody } from "./upstream-request.js";
import { UpstreamEventMapper, readSseData } from "./upstream-events.js";
import { fromUpstreamResponse } from "./upstream-errors.js";
import { describeFetchError } from "./fetch-error.js";

/** Creates the model and learns its context window from the first replica that answers. */
export async function createRemoteModel(spec: RemoteModelSpec): Promise<LoadedModel> {
  const pool = new ReplicaPool(spec.replicas, { maxConcurrency: spec.maxConcurrency ?? 8, healthIntervalMs: spec.healthIntervalMs ?? 5000, healthTimeoutMs: 2000 });
  const listed = spec.contextSize !== undefined && spec.upstreamModel !== undefined ? [] : await listUpstreamModels(spec.replicas);
  const only = listed.length === 1 ? listed[0]!.id : undefined;
  const picked = spec.upstreamModel === undefined && only !== undefined && only !== spec.id;
  const upstreamModel = spec.upstreamModel ?? (picked ? only! : spec.id);
  const item = listed.find((model) => model.id === upstreamModel) ?? listed[0];
  const contextSize = spec.contextSize ?? contextSizeOf(item) ?? 8192;
  pool.startHealthChecks();
  return new RemoteModel(spec, pool, upstreamModel, picked, contextSize);
}

class RemoteModel implements LoadedModel {
  readonly info: ModelInfo;

  constructor(private readonly spec: RemoteModelSpec, private readonly pool: ReplicaPool, private readonly upstreamModel: string, picked: boolean, contextSize: number) {
    this.info = {
      id: spec.id, aliases: spec.aliases ?? [], backend: "remote", contextSize, created: Math.floor(Date.now() / 1000), ownedBy: "kiln", fim: false,
      // replica states are read live, so /v1/models and `kiln ps` show the current health
      details: { upstreamModel, upstreamModelPicked: picked, get replicas() { return pool.states(); } },
    };
  }

  get parallel(): number {
    return this.pool.capacity;
  }

  generate(request: ChatRequest, options: GenerateOptions = {}): AsyncIterable<GenerationEvent> {
    const body = toUpstreamChatBody(request, this.upstreamModel);
    return this.stream("/chat/completions", body, new UpstreamEventMapper(this.info.id, request.stop), options.signal);
  }

  complete(request: CompletionRequest, options: GenerateOptions = {}): AsyncIterable<GenerationEvent> {
    const body: Record<string, unknown> = {
      model: this.upstreamModel, prompt: request.prompt, max_tokens: request.maxTokens, stream: true, stream_options: { include_usage: true },
      ...(request.suffix !== undefined ? { suffix: request.suffix } : {}), ...(request.stop?.length ? { stop: request.stop } : {}),
      // The upstream echoes the prompt as the first text it streams.
      ...(request.echo ? { echo: true } : {}),
      ...(request.sampling?.temperature !== undefined ? { temperature: request.sampling.temperature } : {}),
      ...(request.sampling?.topP !== undefined ? { top_p: request.sampling.topP } : {}),
      ...(request.sampling?.seed !== undefined ? { seed: request.sampling.seed } : {}),
    };
    return this.stream("/completions", body, new UpstreamEventMapper(this.info.id, request.stop), options.signal, true);
  }

  /** Exact prompt size from the upstream itself: a one-token request and its reported usage. */
  async countTokens(request: ChatRequest): Promise<number> {
    const body = { ...toUpstreamChatBody({ ...request, maxTokens: 1 }, this.upstreamModel), stream: false, stream_options: undefined };
    const { response } = await this.send("/chat/completions", body, undefined);
    const json = (await response.json()) as { usage?: { prompt_tokens?: number } };
    if (typeof json.usage?.prompt_tokens !== "number") throw new EngineError("backend_failure", "the upstream did not report prompt tokens");
    return json.usage.prompt_tokens;
  }

  /**
   * The upstream's own /embeddings, as float vectors in the inputs' order; `dimensions` is the upstream's to grant or
   * refuse (its 400 stays a 400). The vectors are scaled to length 1 like every kiln vector.
   */
  async embed(request: EmbeddingRequest, options: GenerateOptions = {}): Promise<EmbeddingResult> {
    const body = { model: this.upstreamModel, input: request.inputs, encoding_format: "float", ...(request.dimensions ? { dimensions: request.dimensions } : {}) };
    const { response, release } = await this.send("/embeddings", body, options.signal);
    try {
      const json = (await response.json()) as { data?: Array<{ index?: number; embedding?: unknown }>; usage?: { prompt_tokens?: number } };
      const data = [...(json.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      if (data.length !== request.inputs.length || !data.every((item) => Array.isArray(item.embedding))) {
        throw new EngineError("backend_failure", `the upstream answered ${data.length} embeddings for ${request.inputs.length} inputs`);
      }
      return { model: this.info.id, vectors: data.map((item) => toUnitLength(item.embedding as number[])), inputTokens: json.usage?.prompt_tokens ?? 0 };
    } finally {
      release();
    }
  }

  async dispose(): Promise<void> {
    this.pool.stop();
  }

  private async *stream(path: string, body: Record<string, unknown>, mapper: UpstreamEventMapper, signal: AbortSignal | undefined, legacy = false): AsyncGenerator<GenerationEvent> {
    const { response, release } = await this.send(path, body, signal);
    try {
      for await (const data of readSseData(response.body!)) {
        const chunk = JSON.parse(data);
        if (legacy) for (const choice of chunk.choices ?? []) choice.delta = { content: choice.text };
        yield* mapper.map(chunk);
      }
      if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
      yield* mapper.finish();
    } finally {
      release();
    }
  }

  /**
   * Sends to the least-loaded healthy replica. A connection failure or a 5xx before any byte of the answer moves
   * on to the next replica (marking the failed one down); an upstream 4xx is final.
   */
  private async send(path: string, body: Record<string, unknown>, signal: AbortSignal | undefined): Promise<{ response: Response; release: () => void }> {
    const tried = new Set<Replica>();
    let lastError: EngineError = new EngineError("overloaded", `no healthy replica of ${this.info.id} is available`, { retryAfter: 1 });
    for (let replica = this.pool.pick(); replica; replica = this.pool.pick(tried)) {
      tried.add(replica);
      replica.outstanding++;
      let released = false;
      const release = () => { if (!released) { released = true; replica.outstanding--; } };
      try {
        const timeout = AbortSignal.timeout(this.spec.connectTimeoutMs ?? 60_000);
        const response = await fetch(`${replica.spec.url}${path}`, {
          method: "POST", headers: replica.headers(), body: JSON.stringify(body),
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        if (response.ok) {
          replica.served++;
          return { response, release };
        }
        release();
        lastError = await fromUpstreamResponse(response, replica.spec.url);
        if (lastError.code !== "overloaded") throw lastError;
      } catch (error) {
        release();
        if (error instanceof EngineError) throw error;
        if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
        const reason = describeFetchError(error);
        this.pool.markDown(replica, reason);
        lastError = new EngineError("overloaded", `upstream ${replica.spec.url} is unreachable: ${reason}`, { retryAfter: 1 });
      }
    }
    throw lastError;
  }
}

/** One entry of an upstream's `/models` list. */
type UpstreamModel = Record<string, any> & { id: string };

/** The models of the first replica whose `/models` answers (none when no replica answers). */
async function listUpstreamModels(replicas: ReplicaSpec[]): Promise<UpstreamModel[]> {
  for (const replica of replicas) {
    try {
      const response = await fetch(`${replica.url.replace(/\/+$/, "")}/models`, {
        headers: replica.apiKey ? { authorization: `Bearer ${replica.apiKey}` } : {}, signal: AbortSignal.timeout(3000),
      });
      if (!response.ok) continue;
      const list = (await response.json()) as { data?: unknown };
      if (Array.isArray(list.data)) return list.data.filter((model): model is UpstreamModel => typeof model?.id === "string");
    } catch {
      // an unreachable replica is handled by the health check; try the next one
    }
  }
  return [];
}

/** The context window an upstream lists for a model (vLLM max_model_len, llama.cpp meta.n_ctx, kiln context_window…). */
function contextSizeOf(model: UpstreamModel | undefined): number | undefined {
  const size = model?.max_model_len ?? model?.context_length ?? model?.context_window ?? model?.max_input_tokens ?? model?.meta?.n_ctx;
  return typeof size === "number" ? size : undefined;
}
