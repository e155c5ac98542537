/**
 * llama-server as a fair peer: built from the llama.cpp source bundle that ships inside node-llama-cpp (the same
 * release as its prebuilt binaries), with the same runtime CPU-variant dispatch (GGML_BACKEND_DL + all variants).
 * The build (~15 minutes on 2 cores) lives in a cache folder outside the repository and is reused across runs.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { availableParallelism, homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const BUNDLE = fileURLToPath(new URL("../../node_modules/node-llama-cpp/llama/gitRelease.bundle", import.meta.url));
const TARGETS = ["llama-server"];
const BUILD_TARGETS = ["llama-server", "llama-bench"];
const CMAKE_FLAGS = ["-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON", "-DLLAMA_CURL=OFF",
  "-DCMAKE_BUILD_TYPE=Release"];

/** Where the llama.cpp checkout and build live: BENCH_LLAMA_CPP_DIR, else ~/.cache/kiln-bench/llama.cpp. */
export function llamaCppDir(env = process.env) {
  if (env.BENCH_LLAMA_CPP_DIR) return env.BENCH_LLAMA_CPP_DIR;
  return join(env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kiln-bench", "llama.cpp");
}

function run(cmd, args, cwd, log) {
  log(`$ ${cmd} ${args.join(" ")}`);
  execFileSync(cmd, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
}

/** Clones the bundle and builds the missing targets (incrementally when a build folder exists). */
function buildMissing(dir, binDir, log, targets) {
  if (!existsSync(join(dir, "CMakeLists.txt"))) run("git", ["clone", "--quiet", BUNDLE, dir], undefined, log);
  if (!existsSync(join(dir, "build", "CMakeCache.txt"))) run("cmake", ["-B", "build", ...CMAKE_FLAGS], dir, log);
  const missing = targets.filter((t) => !existsSync(join(binDir, t)));
  log(`building ${missing.join(", ")} (this takes a while the first time)`);
  run("cmake", ["--build", "build", "--config", "Release", "-j", String(availableParallelism()), "--target", ...missing],
    dir, log);
}

/**
 * Runs a tiny llama-bench; if a CPU variant dies with an illegal instruction (seen with the sapphirerapids/AMX
 * variant on some virtual machines), removes that variant so the loader picks the next best one, and retries.
 */
function dropCrashingVariants(binDir, modelPath, threads, log) {
  const removed = [];
  if (!existsSync(join(binDir, "llama-bench"))) return removed;
  for (let attempt = 0; attempt < 4; attempt++) {
    const res = spawnSync(join(binDir, "llama-bench"), ["-m", modelPath, "-p", "8", "-n", "2", "-r", "1", "-t", String(threads)],
      { encoding: "utf8", timeout: 120_000 });
    if (res.signal !== "SIGILL") return removed;
    const variant = `${res.stdout}${res.stderr}`.match(/libggml-cpu-([\w.-]+?)\.so/g)?.pop();
    if (!variant) throw new Error("llama-bench died with SIGILL and no CPU variant could be identified");
    log(`llama.cpp variant ${variant} crashed with SIGILL here; removing it`);
    rmSync(join(binDir, variant));
    removed.push(variant);
  }
  throw new Error("llama-bench keeps crashing with SIGILL");
}

/**
 * Ensures llama-server (plus `extraTargets`, e.g. llama-bench, llama-batched-bench) exists; returns the paths and
 * the source commit. llama-bench, when built, checks the CPU variant first (see dropCrashingVariants).
 */
export function ensureLlamaCpp({ modelPath, threads, log = console.error, env = process.env, extraTargets = [] }) {
  const dir = llamaCppDir(env);
  const binDir = join(dir, "build", "bin");
  const targets = [...TARGETS, ...extraTargets];
  if (targets.some((t) => !existsSync(join(binDir, t)))) buildMissing(dir, binDir, log, [...new Set([...BUILD_TARGETS, ...extraTargets])]);
  const removedVariants = dropCrashingVariants(binDir, modelPath, threads, log);
  const commit = execFileSync("git", ["-C", dir, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  return {
    dir,
    binDir,
    commit,
    removedVariants,
    server: join(binDir, "llama-server"),
    bench: join(binDir, "llama-bench"),
    batchedBench: join(binDir, "llama-batched-bench"),
  };
}
