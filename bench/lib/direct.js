/**
 * node-llama-cpp called directly in-process: the upper bound kiln's engine is compared with (no HTTP, no
 * scheduler). Also measures several sequences decoding together in one context, and can record the batches
 * node-llama-cpp actually dispatched (to see whether sequences really share a decode step).
 */
import { readLoadedCpuVariant } from "./processes.js";

/** ChatML, the default model's template, rendered by hand so the direct side sees the prompt the servers build. */
export function renderChatMl(messages) {
  return `${messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("")}<|im_start|>assistant\n`;
}

/** Loads node-llama-cpp (prebuilt binaries only, explicit threads) and the model. */
export async function loadDirect(settings) {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.warn, maxThreads: settings.threads });
  const model = await llama.loadModel({ modelPath: settings.modelPath });
  return { llama, model, cpuVariant: await readLoadedCpuVariant(process.pid) };
}

/**
 * Wraps node-llama-cpp's default batching with a recorder of dispatched batch sizes (sequences per decode step).
 * @param {number[]} sink receives the number of queued sequences at every dispatch
 */
export function recordingBatching(sink) {
  return {
    itemPrioritizationStrategy: ({ items, size }) => {
      sink.push(items.length);
      let left = size;
      const out = [];
      for (const item of items) {
        if (left <= 0) break;
        const processAmount = Math.min(item.tokens.length, left);
        out.push({ item, processAmount });
        left -= processAmount;
      }
      return out;
    },
  };
}

/**
 * Prompt processing: evaluate `tokens` into a fresh sequence, repeated; tokens/s of each run. The context holds as
 * many sequences as the servers' (`settings.parallel`), so all sides decode on the same context shape, with flash
 * attention as `settings.flashAttention` says (absent: node-llama-cpp's default, auto, which llama.cpp resolves).
 */
export async function measurePromptRate(direct, settings, tokens) {
  const context = await direct.model.createContext({
    contextSize: settings.ctxPerSequence, sequences: settings.parallel, threads: settings.threads, flashAttention: settings.flashAttention,
  });
  try {
    const sequence = context.getSequence();
    const rates = [];
    for (let i = 0; i < settings.singleStreamRepeats; i++) {
      await sequence.clearHistory();
      const t0 = performance.now();
      await sequence.evaluateWithoutGeneratingNewTokens(tokens);
      rates.push((tokens.length * 1000) / (performance.now() - t0));
    }
    return rates;
  } finally {
    await context.dispose();
  }
}

/**
 * Generation on `sequences` sequences at once in one context: each sequence prefills `promptTokens`, then all
 * generate up to `maxTokens` together (greedy, stopping at end of generation). Returns the aggregate rate of the
 * generation phase plus per-sequence token counts.
 */
export async function measureGeneration(direct, settings, { sequences, contextSequences = sequences, promptTokensFor, maxTokens, batchSizes }) {
  const context = await direct.model.createContext({
    contextSize: settings.ctxPerSequence, sequences: Math.max(sequences, contextSequences), threads: settings.threads,
    batching: batchSizes ? recordingBatching(batchSizes) : undefined,
  });
  try {
    const seqs = Array.from({ length: sequences }, () => context.getSequence());
    const prompts = seqs.map((_, i) => promptTokensFor(i));
    await Promise.all(seqs.map((s, i) => s.evaluateWithoutGeneratingNewTokens(prompts[i].slice(0, -1))));
    if (batchSizes) batchSizes.length = 0;
    const eog = (t) => direct.model.isEogToken(t);
    const t0 = performance.now();
    const counts = await Promise.all(seqs.map(async (s, i) => {
      let n = 0;
      for await (const token of s.evaluate(prompts[i].slice(-1), { temperature: 0 })) {
        if (eog(token)) break;
        if (++n >= maxTokens) break;
      }
      return n;
    }));
    const seconds = (performance.now() - t0) / 1000;
    const total = counts.reduce((a, b) => a + b, 0);
    return { sequences, tokens: counts, aggregateTokensPerSecond: total / seconds, seconds };
  } finally {
    await context.dispose();
  }
}
