/**
 * One native call samples every sequence of a decode step (native/step-sampler.c). node-llama-cpp samples each
 * sequence through an async native call of its own, which reads the whole vocabulary into a candidate array; with
 * many sequences that host work grows with their number and, on a GPU, sets the step time. Here the context's
 * `sampleToken` is wrapped: a call for a sequence whose generation registered plain sampling (temperature, top-k,
 * top-p, min-p, seed: no grammar, bias, penalties or logprobs) waits for the step's other calls — node-llama-cpp
 * makes them all in the same turn of the event loop, once the step's decode is done — and they go to the native
 * module together. Every other call, and everything when the module is missing, goes to node-llama-cpp as before.
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { loadedLibraries, loadNativeModule, nativeHandles, shadowMethod, type NativeModule } from "./native-module.js";

/** How a sequence samples when the step sampler may take it; temperature <= 0 is greedy. */
export interface PlainSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  /** llama.cpp's 32-bit seed; undefined: node-llama-cpp's default (the current second). */
  seed?: number;
}

type SampleToken = (batchLogitIndex: number, sampler: object, ...rest: unknown[]) => Promise<unknown>;

interface NativeBatch {
  initBatch(size: number): void;
  addToBatch(sequenceId: number, firstTokenIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array | number[];
  sampleToken: SampleToken;
}

interface Waiting {
  batchLogitIndex: number;
  sampler: object;
  sampling: PlainSampling;
  resolve(token: number): void;
  reject(error: unknown): void;
}

/** Five numbers per sequence, in native/step-sampler.c's order. */
const SAMPLING_FIELDS = 5;

export class StepSampler {
  /** Native calls made and sequences they sampled, since the model loaded (tests and benchmarks read them). */
  readonly stats = { calls: 0, sequences: 0 };
  private readonly registered = new Map<number, PlainSampling>();
  /** The sequence each output row of the step being decoded belongs to. */
  private readonly rowOwners = new Map<number, number>();
  /** One native sampling state per node-llama-cpp sampler: a generation's random state lives as long as it does. */
  private readonly states = new WeakMap<object, object>();
  private waiting: Waiting[] = [];

  private constructor(
    private readonly native: NativeModule,
    private readonly handle: object,
    private readonly nativeContext: NativeBatch,
    private readonly sampleAlone: SampleToken,
  ) {}

  /** Wraps `context`'s sampling; undefined where the native module is missing or cannot identify the context. */
  static attach(context: LlamaContext, model: LlamaModel): StepSampler | undefined {
    const native = loadNativeModule();
    const libraries = native && loadedLibraries();
    const handles = libraries && nativeHandles(context, model);
    const batch = handles?.context as Partial<NativeBatch> | undefined;
    if (!native || !libraries || !handles || typeof batch?.initBatch !== "function" || typeof batch.addToBatch !== "function"
      || typeof batch.sampleToken !== "function") return undefined;
    let handle: object | null;
    try {
      handle = native.stepContext(handles.context, handles.model, handles.context.getContextSize(), context.totalSequences, libraries.libllama);
    } catch {
      return undefined;
    }
    if (!handle) return undefined;
    const { initBatch, addToBatch, sampleToken } = batch as NativeBatch;
    const sampler = new StepSampler(native, handle, batch as NativeBatch, sampleToken);
    shadowMethod(batch, "initBatch", (size) => {
      sampler.rowOwners.clear();
      initBatch.call(batch, size);
    });
    shadowMethod(batch, "addToBatch", (sequenceId, firstTokenIndex, tokens, logitIndexes) => {
      const rows = addToBatch.call(batch, sequenceId, firstTokenIndex, tokens, logitIndexes);
      for (const row of rows) sampler.rowOwners.set(row, sequenceId);
      return rows;
    });
    shadowMethod(batch, "sampleToken", (batchLogitIndex, addonSampler, ...rest) => sampler.sample(batchLogitIndex, addonSampler, rest));
    return sampler;
  }

  /** The most top-k candidates the native sampler picks; a larger top-k samples through node-llama-cpp. */
  get maxTopK(): number {
    return this.native.maxTopK;
  }

  /** `sequence`'s tokens are sampled as `sampling` says until the returned function is called. */
  register(sequence: LlamaContextSequence, sampling: PlainSampling): () => void {
    // node-llama-cpp's id for the sequence, the one its batches carry (an internal field of the pinned release).
    const id = (sequence as unknown as { _sequenceId?: number })._sequenceId;
    if (typeof id !== "number") return () => {};
    this.registered.set(id, sampling);
    return () => {
      if (this.registered.get(id) === sampling) this.registered.delete(id);
    };
  }

  private sample(batchLogitIndex: number, addonSampler: object, rest: unknown[]): Promise<unknown> {
    const owner = this.rowOwners.get(batchLogitIndex);
    const sampling = owner === undefined ? undefined : this.registered.get(owner);
    // Metadata (logprobs) and sequences not registered sample alone; so does a sampler already waiting in this step.
    if (!sampling || rest.some((argument) => argument !== undefined) || this.waiting.some((w) => w.sampler === addonSampler)) {
      return this.sampleAlone.call(this.nativeContext, batchLogitIndex, addonSampler, ...rest);
    }
    return new Promise<number>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => this.flush());
      this.waiting.push({ batchLogitIndex, sampler: addonSampler, sampling, resolve, reject });
    });
  }

  /** Samples the waiting sequences in one native call; if that fails, each through node-llama-cpp. */
  private flush(): void {
    const batch = this.waiting;
    this.waiting = [];
    const indexes = new Int32Array(batch.length);
    const sampling = new Float64Array(batch.length * SAMPLING_FIELDS);
    const now = Math.floor(Date.now() / 1000);
    batch.forEach((waiting, i) => {
      const { temperature, topK, topP, minP, seed } = waiting.sampling;
      indexes[i] = waiting.batchLogitIndex;
      sampling.set([temperature, topK, topP, minP, seed ?? now], i * SAMPLING_FIELDS);
    });
    const states = batch.map((waiting) => this.stateOf(waiting.sampler));
    this.stats.calls++;
    this.stats.sequences += batch.length;
    let sampled: Promise<Int32Array>;
    try {
      sampled = this.native.sampleStep(this.handle, this.nativeContext, indexes, sampling, states);
    } catch (error) {
      sampled = Promise.reject(error);
    }
    sampled.then(
      (tokens) => batch.forEach((waiting, i) => waiting.resolve(tokens[i]!)),
      () => {
        for (const waiting of batch) {
          this.sampleAlone.call(this.nativeContext, waiting.batchLogitIndex, waiting.sampler).then((token) => waiting.resolve(token as number), waiting.reject);
        }
      },
    );
  }

  private stateOf(addonSampler: object): object {
    let state = this.states.get(addonSampler);
    if (!state) this.states.set(addonSampler, state = this.native.sequenceSampler());
    return state;
  }
}
