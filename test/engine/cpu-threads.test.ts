/**
 * CPU threading of llama.cpp contexts on the real default model: the persistent thread pool (native/threadpool.c)
 * attaches to a two-thread context and decodes exactly what one thread decodes; steps on fewer threads switch to a
 * smaller pool and leave the larger one's workers asleep; the native module refuses a context whose layout it cannot
 * confirm; an idle pool's workers sleep and wake at the next step; steps decoded on the event loop's thread give what
 * node-llama-cpp's work item gives and leave the loop a turn between a stream's tokens, also when every sequence of
 * the context generates; and the fallback policy runs small steps on one thread and prompts on all.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama, LlamaModel, Token } from "node-llama-cpp";
import { applyDecodeThreads, IDLE_PAUSE_MS, threadsForStep, type DecodeSteps } from "../../src/engine/backends/llama-cpp/decode-threads.js";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { loadedLibraries, loadNativeModule, nativeHandles } from "../../src/engine/backends/llama-cpp/native-module.js";
import { attachThreadPool } from "../../src/engine/backends/llama-cpp/thread-pool.js";
import type { CompletionRequest } from "../../src/engine/index.js";
import { realModelPath } from "../helpers/real-model.js";
import { readEvents, textOf } from "../helpers/stream-events.js";

let llama: Llama;
let vocabulary: LlamaModel;

beforeAll(async () => {
  llama = await openLlama(false);
  vocabulary = await llama.loadModel({ modelPath: realModelPath() });
});

afterAll(async () => {
  await vocabulary?.dispose();
  await llama?.dispose();
});

const request: CompletionRequest = {
  model: "m", prompt: "The three primary colors are", maxTokens: 24, sampling: { temperature: 0 },
};

async function greedyText(threads: number): Promise<{ text: string; threading: unknown }> {
  const model: LlamaCppModel = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 512, threads, prefixCache: false });
  try {
    return { text: textOf(await readEvents(model.complete(request))), threading: model.info.details?.cpuThreading };
  } finally {
    await model.dispose();
  }
}

describe("persistent thread pool", () => {
  it("attaches to a two-thread CPU context and decodes exactly what one thread decodes", async () => {
    const pooled = await greedyText(2);
    const single = await greedyText(1);
    expect(pooled.threading).toBe("persistent pool");
    expect(single.threading).toBe("fixed");
    expect(pooled.text.length).toBeGreaterThan(0);
    expect(pooled.text).toBe(single.text);
  });

  it("attaches to a context llama.cpp holds larger than asked (2 × 8,000 tokens, padded to 2 × 8,192)", async () => {
    // node-llama-cpp keeps the asked size when its own padding would reach the train context; llama.cpp pads each
    // sequence's cells to 256 anyway. The native module then took the two sizes for a layout it could not confirm and
    // left the context without its pool and step sampler: one stream ran at 60% of its speed.
    const model = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 8000, threads: 2, prefixCache: false, prefillLane: false });
    try {
      expect(model.info.details?.cpuThreading).toBe("persistent pool");
      expect(model.info.contextSize).toBe(8000);
      expect(textOf(await readEvents(model.complete(request))).length).toBeGreaterThan(0);
    } finally {
      await model.dispose();
    }
  });

  it("leaves its workers asleep while the context steps on one thread, and decodes what one thread decodes", async () => {
    const greedy = async (threads: number, switching: boolean) => {
      const before = new Set(threadIds());
      const context = await vocabulary.createContext({ contextSize: 512, sequences: 1, threads });
      const attached = switching ? attachThreadPool(context, vocabulary, threads) : undefined;
      const workers = threadIds().filter((id) => !before.has(id));
      if (attached) applyDecodeThreads(context, { threads, minTokensForAllThreads: 16, use: attached.use });
      try {
        const sequence = context.getSequence();
        // The prompt runs on both threads (the pool's worker computes), the tokens after it on one.
        const prompt = vocabulary.tokenize("The three primary colors are red, green and blue. The three secondary colors are", true);
        await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
        const workerTime = () => workers.reduce((sum, id) => sum + cpuJiffies(id), 0);
        const [startedAt, startedWork] = [performance.now(), workerTime()];
        const tokens: Token[] = [];
        for await (const token of sequence.evaluate(prompt.slice(-1), { temperature: 0 })) if (tokens.push(token) >= 120) break;
        return { text: vocabulary.detokenize(tokens), workerMs: (workerTime() - startedWork) * 10, wallMs: performance.now() - startedAt };
      } finally {
        await context.dispose();
        attached?.release();
      }
    };
    const switching = await greedy(2, true);
    const single = await greedy(1, false);
    expect(switching.text).toBe(single.text);
    // A worker left polling (llama.cpp's default level) took half the generation's time or more.
    expect(switching.wallMs).toBeGreaterThan(200);
    expect(switching.workerMs).toBeLessThan(switching.wallMs * 0.25);
  });

  it("sends its workers to sleep once the context has had no step for a while, and wakes them at its next step", async () => {
    const generate = async (threads: number) => {
      const before = new Set(threadIds());
      const context = await vocabulary.createContext({ contextSize: 512, sequences: 1, threads });
      const attached = threads > 1 ? attachThreadPool(context, vocabulary, threads) : undefined;
      const workers = threadIds().filter((id) => !before.has(id));
      let pauses = 0;
      if (attached) applyDecodeThreads(context, { threads, minTokensForAllThreads: 0, use: attached.use, pause: () => { pauses++; attached.pause(); } });
      const workerTicks = () => workers.reduce((sum, id) => sum + cpuJiffies(id), 0);
      const sequence = context.getSequence();
      const reply = async (text: string) => {
        const tokens: Token[] = [];
        for await (const token of sequence.evaluate(vocabulary.tokenize(text, tokens.length === 0 && sequence.nextTokenIndex === 0), { temperature: 0 })) {
          if (tokens.push(token) >= 16) break;
        }
        return vocabulary.detokenize(tokens);
      };
      try {
        const first = await reply("The three primary colors are");
        await sleep(IDLE_PAUSE_MS * 5);
        const pausedAfterFirst = pauses;
        // Polling workers (llama.cpp's default level) would keep a core busy for ~180 ms of this.
        const idleFrom = workerTicks();
        await sleep(300);
        const idleWorkerMs = (workerTicks() - idleFrom) * 10;
        const second = await reply(" The three secondary colors are");
        return { text: first + "|" + second, pausedAfterFirst, idleWorkerMs, pooled: attached?.pooled ?? false };
      } finally {
        await context.dispose();
        attached?.release();
      }
    };
    const pooled = await generate(2);
    const single = await generate(1);
    expect(pooled.pooled).toBe(true);
    // At least once (a step gap on a busy machine may pause it mid-reply too: it then wakes at the next step).
    expect(pooled.pausedAfterFirst).toBeGreaterThanOrEqual(1);
    expect(pooled.idleWorkerMs).toBeLessThan(60);
    // The woken pool computes what one thread computes.
    expect(pooled.text).toBe(single.text);
  });

  it("refuses a context whose size does not match, and leaves it working", async () => {
    const native = loadNativeModule();
    const libraries = loadedLibraries();
    expect(native).not.toBeNull();
    expect(libraries).toBeDefined();
    const context = await vocabulary.createContext({ contextSize: 256, sequences: 1, threads: 2 });
    try {
      const handles = nativeHandles(context, vocabulary);
      expect(handles).toBeDefined();
      if (!native || !libraries || !handles) return;
      const nCtx = handles.context.getContextSize();
      expect(native.attach(handles.context, handles.model, nCtx + 1, 1, 2, 0, libraries.libllama, libraries.libggml)).toBeNull();
      expect(native.attach(handles.context, handles.model, nCtx, 2, 2, 0, libraries.libllama, libraries.libggml)).toBeNull();
      const tokens = vocabulary.tokenize("Hello there", true);
      const first = await context.getSequence().evaluate(tokens, { temperature: 0 }).next();
      expect(first.done).toBe(false);
    } finally {
      await context.dispose();
    }
  });

  it("is not attached to a one-thread context, whose steps can still be interrupted", async () => {
    const context = await vocabulary.createContext({ contextSize: 256, sequences: 1, threads: 1 });
    try {
      const attached = attachThreadPool(context, vocabulary, 1);
      expect(attached?.pooled).toBe(false);
      attached?.interrupt(true);
      const sequence = context.getSequence();
      await expect(sequence.evaluateWithoutGeneratingNewTokens(vocabulary.tokenize("Hello there", true))).rejects.toThrow();
      expect(sequence.nextTokenIndex).toBe(0);
      attached?.interrupt(false);
      await sequence.evaluateWithoutGeneratingNewTokens(vocabulary.tokenize("Hello there", true));
      expect(sequence.nextTokenIndex).toBeGreaterThan(0);
    } finally {
      await context.dispose();
    }
  });
});

describe("steps on the event loop's thread", () => {
  const requests: CompletionRequest[] = [
    { ...request, prompt: "The three primary colors are" },
    { ...request, prompt: "A short poem about rivers:\n", sampling: { temperature: 0.8, seed: 7 } },
    { ...request, prompt: "Ten uses for a brick:\n1.", sampling: { temperature: 1.2, topK: 100, seed: 9 } },
  ];
  const load = (stepsOnLoop: boolean) => loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 3, ctxSize: 512, threads: 2, prefixCache: false, stepsOnLoop });
  const stepsOf = (model: LlamaCppModel) => (model as unknown as { parts: { steps?: DecodeSteps } }).parts.steps;

  it("decode exactly what node-llama-cpp's work item decodes, greedy and seeded, sequences sharing steps", async () => {
    const onLoop = await load(true);
    const inWorker = await load(false);
    try {
      // Every step on the loop, whatever this machine's speed (the planner's own choice is tested without a model).
      const loopSteps = stepsOf(onLoop)!;
      loopSteps.onLoop = () => true;
      const together = await Promise.all(requests.map((r) => readEvents(onLoop.complete(r))));
      const alone = await Promise.all(requests.map((r) => readEvents(inWorker.complete(r))));
      expect(together.map(textOf)).toEqual(alone.map(textOf));
      expect(textOf(together[0]!).length).toBeGreaterThan(0);
      expect(loopSteps.loopSteps).toBeGreaterThanOrEqual(request.maxTokens);
      expect(stepsOf(inWorker)!.loopSteps).toBe(0);
    } finally {
      await onLoop.dispose();
      await inWorker.dispose();
    }
  });

  it("let the event loop turn between a lone stream's tokens, so sockets and timers are served", async () => {
    const model = await load(true);
    try {
      await expectTurnsBetweenTokens(model, [{ ...request, maxTokens: 64 }]);
    } finally {
      await model.dispose();
    }
  });

  // node-llama-cpp dispatches a step at once, in a microtask, when every sequence of the context has a token queued.
  it("let the event loop turn between tokens when every sequence of the context generates: one of one, three of three", async () => {
    const single = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 1, ctxSize: 512, threads: 2, prefixCache: false });
    const full = await load(true);
    try {
      await expectTurnsBetweenTokens(single, [{ ...request, maxTokens: 64 }]);
      await expectTurnsBetweenTokens(full, requests.map((r) => ({ ...r, maxTokens: 64 })));
    } finally {
      await single.dispose();
      await full.dispose();
    }
  });

  /** Runs `batch` at once with every step on the loop's thread, asking for a turn of the loop again at every turn. */
  async function expectTurnsBetweenTokens(model: LlamaCppModel, batch: CompletionRequest[]): Promise<void> {
    const steps = stepsOf(model)!;
    steps.onLoop = () => true;
    let tokens = 0;
    // Tokens generated between asking for a turn of the event loop and getting it.
    const waits: number[] = [];
    let stopped = false;
    const askForTurns = () => {
      const asked = tokens;
      setImmediate(() => {
        waits.push(tokens - asked);
        if (!stopped) askForTurns();
      });
    };
    askForTurns();
    await Promise.all(batch.map(async (r) => {
      for await (const event of model.complete(r)) if (event.type === "text-delta") tokens++;
    }));
    stopped = true;
    expect(steps.loopSteps).toBeGreaterThanOrEqual(32);
    expect(tokens).toBeGreaterThan(32 * batch.length);
    // The loop turned at least once every few steps, never held for the whole generation.
    expect(waits.length).toBeGreaterThan(tokens / batch.length / 4);
    expect(Math.max(...waits)).toBeLessThanOrEqual(3 * batch.length);
  }

  it("are the step planner's choice by default", async () => {
    const model = await load(true);
    try {
      await readEvents(model.complete(request));
      // A planner that has measured a short step and expects short ones, whatever this machine's speed.
      model.planner.calibrated({ fixed: 1, perToken: 1, perTokenPerKDepth: 0 });
      model.planner.stepStarted(undefined);
      model.planner.stepStarted(5);
      const steps = stepsOf(model)!;
      expect(steps.onLoop(1)).toBe(true);
      expect(steps.onLoop(512)).toBe(false);
    } finally {
      await model.dispose();
    }
  });
});

describe("fallback: threads per step", () => {
  it("runs steps below the threshold on one thread and larger ones on all", () => {
    const policy = { threads: 4, minTokensForAllThreads: 16 };
    expect(threadsForStep(policy, 1)).toBe(1);
    expect(threadsForStep(policy, 15)).toBe(1);
    expect(threadsForStep(policy, 16)).toBe(4);
    expect(threadsForStep(policy, 512)).toBe(4);
  });

  it("switches a real context between one thread for generation and all for a prompt", async () => {
    const context = await vocabulary.createContext({ contextSize: 512, sequences: 1, threads: 2 });
    try {
      expect(applyDecodeThreads(context, { threads: 2, minTokensForAllThreads: 16 })).toBeDefined();
      const sequence = context.getSequence();
      await sequence.evaluateWithoutGeneratingNewTokens(vocabulary.tokenize("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen", true));
      expect(context.currentThreads).toBe(2);
      await sequence.evaluateWithoutGeneratingNewTokens(vocabulary.tokenize(" eighteen", false));
      expect(context.currentThreads).toBe(1);
    } finally {
      await context.dispose();
    }
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** This process's thread ids. */
function threadIds(): string[] {
  return readdirSync("/proc/self/task");
}

/** A thread's user + system CPU time in clock ticks (10 ms). */
function cpuJiffies(id: string): number {
  try {
    const fields = readFileSync(`/proc/self/task/${id}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // the thread has ended
  }
}
