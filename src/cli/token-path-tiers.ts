/**
 * V8 optimizes a function once it has run about 66 KB of its bytecode. The functions a token passes through (sampling,
 * events, encoding, the socket write) run once per token, so under the default most of them were still in V8's
 * baseline tier hundreds of tokens into a stream, where every property load calls into a builtin: about 0.2 ms of
 * JavaScript per token on a 2-core machine (bench/results/2026-11-28-vm-token-path-tiers.md). A quarter of that budget
 * has them optimized within the first replies. It is set once the model is loaded, before the first token: set at
 * start-up, the optimizing compiler's extra work on code that runs once cost `kiln models` 12 ms of its 115 ms and a
 * 16-token `kiln run` about 65 ms of its 1.6 s; set here, that run takes what it took without it (medians 1,584 and
 * 1,594 ms, 10 alternated pairs).
 */
import { setFlagsFromString } from "node:v8";

/** Lowers V8's interrupt budget for what this process runs from now on (after loading, before the first token). */
export function optimizeTokenPathSooner(): void {
  setFlagsFromString("--interrupt-budget=16384");
}
