/** Measures memory read bandwidth with bandwidth.c (compiled once into the work folder) and derives the roofline. */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SOURCE = fileURLToPath(new URL("./bandwidth.c", import.meta.url));

/** Compiles the bandwidth probe (AVX2 first, plain -O2 as fallback) unless a fresh binary exists. */
function compileProbe(workDir) {
  mkdirSync(workDir, { recursive: true });
  const binary = join(workDir, "bandwidth");
  if (existsSync(binary) && statSync(binary).mtimeMs > statSync(SOURCE).mtimeMs) return binary;
  const attempts = [["-O3", "-march=x86-64-v3"], ["-O2"]];
  for (const flags of attempts) {
    try {
      execFileSync("cc", [...flags, "-pthread", "-o", binary, SOURCE], { stdio: "ignore", timeout: 60_000 });
      return binary;
    } catch {
      /* try the next, more portable flag set */
    }
  }
  throw new Error("could not compile bench/lib/bandwidth.c (is a C compiler installed?)");
}

/** Best-of-N read bandwidth in GB/s for the given thread counts. */
export function measureBandwidth(workDir, threadCounts, { mib = 512, passes = 5 } = {}) {
  const binary = compileProbe(workDir);
  const results = {};
  for (const threads of threadCounts) {
    const out = execFileSync(binary, [String(threads), String(mib), String(passes)], { encoding: "utf8", timeout: 120_000 });
    results[threads] = JSON.parse(out).bestGBs;
  }
  return results;
}

/**
 * Generation reads every weight once per token, so bandwidth ÷ model bytes bounds single-stream tokens/s.
 * (The tied embedding/output matrix is read in full by the output projection, so the file size is a fair estimate.)
 */
export function rooflineTokensPerSecond(bandwidthGBs, modelBytes) {
  return (bandwidthGBs * 1e9) / modelBytes;
}
