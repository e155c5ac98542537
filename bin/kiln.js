#!/usr/bin/env node
import { setFlagsFromString } from "node:v8";

// V8 optimizes a function once it has run about 66 KB of its bytecode. The functions a token passes through (sampling,
// events, encoding, the socket write) run once per token, so under the default most of them were still in V8's
// baseline tier hundreds of tokens into a stream, where every property load calls into a builtin: about 0.2 ms of
// JavaScript per token on a 2-core machine (bench/results/2026-11-28-vm-token-path-tiers.md). A quarter of that
// budget has them optimized within the first replies.
setFlagsFromString("--interrupt-budget=16384");
await import("../dist/cli/main.js");
