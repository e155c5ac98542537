/**
 * Benchmark settings shared by every side (direct node-llama-cpp, kiln, llama-server), so one run compares like with
 * like: same threads, same per-sequence context, same number of parallel sequences, same prompts.
 */
import { availableParallelism, homedir } from "node:os";
import { join } from "node:path";

/** @typedef {ReturnType<typeof readSettings>} Settings */

/** Reads the settings, with environment overrides for quick local runs (BENCH_QUICK=1 shrinks every phase). */
export function readSettings(env = process.env) {
  const quick = env.BENCH_QUICK === "1";
  const kilnHome = env.KILN_HOME ?? join(homedir(), ".kiln");
  return {
    quick,
    kilnHome,
    /** What kiln is told to serve: BENCH_MODEL, else BENCH_MODEL_PATH (so every side loads the same file). */
    modelName: env.BENCH_MODEL ?? env.BENCH_MODEL_PATH ?? "smollm2-135m",
    modelPath: env.BENCH_MODEL_PATH ?? join(kilnHome, "models", `${env.BENCH_MODEL ?? "smollm2-135m"}.gguf`),
    threads: Number(env.BENCH_THREADS ?? availableParallelism()),
    /** Context per sequence, in tokens (kiln --ctx-size; llama-server gets ctxPerSequence × parallel, split per slot). */
    ctxPerSequence: Number(env.BENCH_CTX ?? 8192),
    parallel: Number(env.BENCH_PARALLEL ?? 8),
    promptTokens: 512,
    generateTokens: quick ? 32 : 128,
    singleStreamRepeats: Number(env.BENCH_REPEATS ?? (quick ? 1 : 3)),
    sweepClients: quick ? [1, 2] : [1, 2, 4, 8],
    sweepTokens: Number(env.BENCH_SWEEP_TOKENS ?? (quick ? 16 : 64)),
    /** Requests each client sends one after another at every sweep level. */
    sweepRounds: Number(env.BENCH_ROUNDS ?? (quick ? 1 : 2)),
    agentTurns: quick ? 3 : 10,
    agentAnswerTokens: quick ? 8 : 16,
    /**
     * Turns replayed on kiln without its prefix cache (all turns by default; BENCH_NO_CACHE_TURNS=1,10 measures only
     * those, each with the exact prompt the cached run sent).
     */
    noCacheTurns: env.BENCH_NO_CACHE_TURNS?.split(",").map(Number),
    /** Turns of each of the two interleaved conversations. */
    interleavedTurns: Number(env.BENCH_INTERLEAVED_TURNS ?? (quick ? 2 : 10)),
    /** Tokens of the restart phase's system prompt and tools (the default model's tokenizer). */
    restartPromptTokens: Number(env.BENCH_RESTART_TOKENS ?? (quick ? 1500 : 4000)),
    /** Sequences the two interleaved agent conversations share (fewer than conversations). */
    interleavedSequences: 1,
    /**
     * Phases to run: "core" (single stream, sweep, agent traces, interleaved), "long" (long prompts) and "mixed"
     * (many clients with unique prompts, bench/lib/mixed-phase.js).
     */
    phases: (env.BENCH_PHASES ?? "core,long,mixed").split(","),
    /** The mixed phase: client levels (the last repeats an earlier one after a larger: the history check), slots, seconds per level, rounds. */
    mixedLevels: env.BENCH_MIXED_LEVELS ?? (quick ? "1,8,4" : "1,8,16,32,64,8"),
    mixedParallel: Number(env.BENCH_MIXED_PARALLEL ?? (quick ? 8 : 64)),
    mixedSeconds: Number(env.BENCH_MIXED_SECONDS ?? (quick ? 5 : 20)),
    mixedRounds: Number(env.BENCH_MIXED_ROUNDS ?? 1),
    /** Agent-shaped prompt sizes for prompt speed, quiet and with one core busy (tokens of the benchmark model). */
    longPromptLengths: (env.BENCH_LONG_LENGTHS ?? (quick ? "2000" : "2000,8000")).split(",").filter(Boolean).map(Number),
    /** Machine states for the long-prompt speed test: quiet, and contended (one core kept busy). */
    longModes: (env.BENCH_LONG_MODES ?? "quiet,contended").split(","),
    /** Rounds of the long-prompt speed test (sides in rotated order each round; the report gives the median). */
    longRepeats: Number(env.BENCH_LONG_REPEATS ?? 1),
    /** The long prompt another client sends (0: skip the ITL and disconnect tests) while a stream runs, and the one a client abandons mid-prompt. */
    itlPromptTokens: Number(env.BENCH_ITL_PROMPT ?? (quick ? 4000 : 16000)),
    /** The running stream: tokens before the long prompt arrives (undisturbed), and its bound. */
    /** When the client of the disconnect test hangs up, from its request. */
    disconnectAfterMs: Number(env.BENCH_DISCONNECT_AFTER_S ?? 3) * 1000,
    /** BENCH_ITL=0: skip the running stream, keep the disconnect test. */
    itlStream: env.BENCH_ITL !== "0",
    itlStreamTokens: Number(env.BENCH_ITL_STREAM_TOKENS ?? 400),
    longTimeoutMs: 1_800_000,
    /** A bound on any one HTTP request, so a stuck server cannot hang the run. */
    requestTimeoutMs: 180_000,
    /** Wall-clock budget: once spent, remaining repeats, levels and turns are skipped (and the report says so). */
    budgetSeconds: Number(env.BENCH_BUDGET_S ?? (quick ? 300 : 840)),
    startedAt: Date.now(),
  };
}

/** True once the run's wall-clock budget is spent. */
export function isOverBudget(settings) {
  return Date.now() - settings.startedAt > settings.budgetSeconds * 1000;
}
