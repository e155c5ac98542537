/**
 * V8 optimizes a function once it has run about 66 KB of its bytecode. The functions a token passes through (sampling,
 * events, encoding, the socket write) run once per token, so under the default most of them were still in V8's
 * baseline tier hundreds of tokens into a stream, where every property load calls into a builtin: about 0.2 ms of
 * JavaScript per token on a 2-core machine (bench/results/2026-11-28-vm-token-path-tiers.md). A quarter of that budget
 * has them optimized within the first replies. Only the commands that generate set it: for the others (`kiln models`,
 * `kiln ps`) the optimizing compiler's extra work at start-up cost 12 ms of a 115 ms run.
 */
import { setFlagsFromString } from "node:v8";

/** Lowers V8's interrupt budget for what this process runs from now on (before its first token). */
export function optimizeTokenPathSooner(): void {
  setFlagsFromString("--interrupt-budget=16384");
}
