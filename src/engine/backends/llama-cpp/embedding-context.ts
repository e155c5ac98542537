/**
 * Embeddings on llama.cpp: node-llama-cpp's embedding context, a second context of the loaded weights opened at the
 * first embedding request (a server that never embeds never pays its memory). It evaluates one input at a time in
 * one sequence and reads the model's pooled output: the pooling an embedding model declares in its GGUF, and for
 * chat models, which declare none, the hidden state after the last token.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import { EngineError } from "../../../errors/engine-error.js";
import { checkDimensions, toUnitLength, type EmbeddingRequest, type EmbeddingResult } from "../../embeddings.js";
import { checkTokenIds, type PlanTarget } from "../../generation-plan.js";

/**
 * Tokens the embedding context holds, when the model's own context is larger: OpenAI's embedding models take up to
 * 8,192 tokens per input, and a larger context would cost memory for inputs no embedding client sends.
 */
const MAX_EMBEDDING_CONTEXT = 8192;

/** An opened embedding context, and what frees the threads kiln gave it (model-parts.ts). */
export interface OpenedEmbeddingContext {
  context: LlamaEmbeddingContext;
  release(): void;
}

export class EmbeddingContext {
  private context?: Promise<OpenedEmbeddingContext>;
  /** Requests evaluating their inputs now (their steps share the model's cores with its main context). */
  private running = 0;

  constructor(private readonly model: LlamaModel, private readonly target: PlanTarget, private readonly openContext: (contextSize: number) => Promise<OpenedEmbeddingContext>) {}

  /** Whether a request is evaluating its inputs. */
  get active(): boolean {
    return this.running > 0;
  }

  /**
   * Checks every input, then evaluates them in order; aborting `signal` stops before the next input. Text is
   * tokenized as plain text (a document's `<|im_end|>` is not a control token), token ids are taken as sent.
   */
  async embed(request: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResult> {
    const { modelId } = this.target;
    checkDimensions(modelId, this.model.embeddingVectorSize, request.dimensions);
    // Token ids are checked before any text is tokenized: a bad one is refused without that work.
    request.inputs.forEach((input, i) => typeof input !== "string" && checkTokenIds(this.target, input, `input.${i}`));
    const { context } = await this.open();
    const inputs: number[][] = [];
    const lengths: number[] = [];
    for (const input of request.inputs) {
      const tokens = typeof input === "string" ? await this.target.vocabulary.tokenizePrompt([input]) : input;
      inputs.push(tokens);
      // The context adds the markers the model expects around an input (BOS, and EOS or SEP for encoders).
      lengths.push(context.calculateInputLength([...tokens] as Token[]));
      // Each text up to 16K characters is tokenized in place: a turn of the event loop between them keeps 2,000 of
      // them (the 32 MB body limit) from holding the server for 21 s (measured on 2 busy cores).
      await nextTurn();
      stopIfAborted(signal);
    }
    const limit = this.contextSize();
    const longest = Math.max(...lengths);
    if (longest >= limit) {
      throw new EngineError("context_overflow", `input: ${longest} tokens exceed the ${limit - 1} that ${modelId} embeds at once`,
        { param: "input", promptTokens: longest, contextSize: limit - 1 });
    }
    const vectors: number[][] = [];
    this.running++;
    try {
      for (const tokens of inputs) {
        stopIfAborted(signal);
        // getEmbeddingFor adds the markers in place: it gets a copy.
        vectors.push(toUnitLength((await context.getEmbeddingFor([...tokens] as Token[])).vector));
      }
    } finally {
      this.running--;
    }
    return { model: modelId, vectors, inputTokens: lengths.reduce((sum, n) => sum + n, 0) };
  }

  async dispose(): Promise<void> {
    const context = this.context;
    this.context = undefined;
    const opened = await context?.catch(() => undefined);
    await opened?.context.dispose();
    opened?.release();
  }

  private contextSize(): number {
    return Math.min(this.target.ctxSize, MAX_EMBEDDING_CONTEXT);
  }

  /** Opens the context once; a failure (memory) is answered to this request and retried by the next. */
  private open(): Promise<OpenedEmbeddingContext> {
    const size = this.contextSize();
    this.context ??= this.openContext(size).catch((error: unknown) => {
      this.context = undefined;
      const reason = error instanceof Error ? error.message : String(error);
      throw new EngineError("backend_failure", `${this.target.modelId}: could not open an embedding context of ${size} tokens: ${reason}`);
    });
    return this.context;
  }
}

function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
}
