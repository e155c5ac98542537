/**
 * One native call samples every plain sequence of a decode step (native/step-sampler.c). node-llama-cpp samples each
 * sequence through an async native call of its own, which reads the whole vocabulary into a candidate array; with
 * many sequences that host work grows with their number and, on a GPU, sets the step time. Here the token loop of a
 * sequence with plain sampling (temperature, top-k, top-p, min-p, seed: no grammar, bias, penalties or logprobs;
 * plain-token-loop.ts) asks for its row once the step's decode is done; node-llama-cpp's batch queue asks for every
 * row of a step in one synchronous pass, so the rows wait only for that pass to end (a microtask, not a turn of the
 * event loop: 0.085 ms a step on a 2-core EPYC) and go to the native module together. A model on the CPU has every
 * step sampled on the calling thread: handing a large step to libuv's threads made them wait for cores the compute
 * threads hold (host time a step, in process on 2 cores: 0.68 → 0.62 ms at four streams of Qwen2.5-Coder-0.5B, 0.90 →
 * 0.76 at eight of SmolLM2; bench/results/2026-11-27-vm-sample-inline.md).
 */
import type { LlamaContext, LlamaModel } from "node-llama-cpp";
import { nativeTarget, type NativeModule } from "./native-module.js";
import type { StepDevice } from "./step-planner.js";

/** How a sequence samples when the step sampler may take it; temperature <= 0 is greedy. */
export interface PlainSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  /** llama.cpp's 32-bit seed; undefined: node-llama-cpp's default (the current second). */
  seed?: number;
}

/** Which steps are sampled on the calling thread: every one, or those small enough (native/step-sampler.c). */
export type SampleInline = "every-step" | "small-steps";

interface Waiting {
  batchLogitIndex: number;
  sampling: PlainSampling;
  /** The generation's native sampling state. */
  state: object;
  resolve(token: number): void;
}

/** Five numbers per sequence, in native/step-sampler.c's order. */
const SAMPLING_FIELDS = 5;

export class StepSampler {
  /** Native calls made and sequences they sampled, since the model loaded (tests and benchmarks read them). */
  readonly stats = { calls: 0, sequences: 0 };
  /** One native sampling state per generation: its random state lives as long as the generation does. */
  private readonly states = new WeakMap<object, object>();
  private waiting: Waiting[] = [];

  private constructor(
    private readonly native: NativeModule,
    private readonly handle: object,
    private readonly nativeContext: object,
    private readonly inlineAll: boolean,
  ) {}

  /**
   * A sampler for `context`'s steps, sampling every step on the calling thread ("every-step", the default on the CPU)
   * or only small ones, larger steps in libuv's threads ("small-steps", the default elsewhere); undefined where the
   * native module is missing or cannot identify the context.
   */
  static attach(context: LlamaContext, model: LlamaModel, device: StepDevice, choice?: boolean | SampleInline): StepSampler | undefined {
    const inline = typeof choice === "string" ? choice : device === "cpu" ? "every-step" : "small-steps";
    const target = nativeTarget(context, model);
    if (!target) return undefined;
    const { native, handles } = target;
    let handle: object | null;
    try {
      handle = native.stepContext(handles.context, handles.model, target.cells, target.sequences, target.libraries.libllama);
    } catch {
      return undefined;
    }
    return handle ? new StepSampler(native, handle, handles.context, inline === "every-step") : undefined;
  }

  /** The most top-k candidates the native sampler picks; a larger top-k samples through node-llama-cpp. */
  get maxTopK(): number {
    return this.native.maxTopK;
  }

  /**
   * Samples output row `batchLogitIndex` of the step just decoded, for the generation `owner` (any object that lives
   * as long as the generation: its random state is kept with it), with the step's other rows asked for in this turn;
   * -1 when the native call fails.
   */
  sample(batchLogitIndex: number, sampling: PlainSampling, owner: object): Promise<number> {
    return new Promise<number>((resolve) => {
      if (this.waiting.length === 0) queueMicrotask(() => this.flush());
      this.waiting.push({ batchLogitIndex, sampling, state: this.stateOf(owner), resolve });
    });
  }

  /** Samples the waiting rows in one native call. */
  private flush(): void {
    const batch = this.waiting;
    this.waiting = [];
    const indexes = new Int32Array(batch.length);
    const sampling = new Float64Array(batch.length * SAMPLING_FIELDS);
    // node-llama-cpp's default seed: the current second.
    const now = Math.floor(Date.now() / 1000);
    batch.forEach((waiting, i) => {
      const { temperature, topK, topP, minP, seed } = waiting.sampling;
      indexes[i] = waiting.batchLogitIndex;
      sampling.set([temperature, topK, topP, minP, seed ?? now], i * SAMPLING_FIELDS);
    });
    this.stats.calls++;
    this.stats.sequences += batch.length;
    let sampled: Promise<Int32Array>;
    try {
      sampled = this.native.sampleStep(this.handle, this.nativeContext, indexes, sampling, batch.map((waiting) => waiting.state), this.inlineAll);
    } catch (error) {
      sampled = Promise.reject(error);
    }
    // A failed call gives no token (-1), which fails the requests in it: a rejection here would reach node-llama-cpp's
    // batch queue, which leaves the step's other sequences waiting.
    sampled.then(
      (tokens) => batch.forEach((waiting, i) => waiting.resolve(tokens[i]!)),
      () => batch.forEach((waiting) => waiting.resolve(-1)),
    );
  }

  private stateOf(owner: object): object {
    let state = this.states.get(owner);
    if (!state) this.states.set(owner, state = this.native.sequenceSampler());
    return state;
  }
}
