/**
 * llama-server as a fair peer: built from the llama.cpp source bundle that ships inside node-llama-cpp (the same
 * release as its prebuilt binaries) with dynamically loaded backends and no CPU backend of its own: it loads
 * node-llama-cpp's prebuilt CPU backends (every variant; the loader picks the best for this CPU, as kiln's does), so
 * both sides run the very same kernels. With BENCH_LLAMA_VULKAN=1 it also gets node-llama-cpp's Vulkan backend.
 * The build (~10 minutes on 2 cores: llama-server and its libraries only) lives in a cache folder outside the
 * repository and is reused across runs.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const BUNDLE = fileURLToPath(new URL("../../node_modules/node-llama-cpp/llama/gitRelease.bundle", import.meta.url));
const PREBUILT = fileURLToPath(new URL("../../node_modules/@node-llama-cpp/", import.meta.url));
const TARGETS = ["llama-server"];
const BUILD_TARGETS = ["llama-server", "llama-bench"];
const CMAKE_FLAGS = ["-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU=OFF", "-DLLAMA_CURL=OFF",
  "-DLLAMA_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release"];

/** Where the llama.cpp checkout and build live: BENCH_LLAMA_CPP_DIR, else ~/.cache/kiln-bench/llama.cpp. */
export function llamaCppDir(env = process.env) {
  if (env.BENCH_LLAMA_CPP_DIR) return env.BENCH_LLAMA_CPP_DIR;
  return join(env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kiln-bench", "llama.cpp-dl");
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
 * Puts node-llama-cpp's prebuilt backends of `platform` beside llama-server, where its loader looks: the CPU variants
 * once (a variant dropped for crashing stays dropped), the Vulkan backend when that platform has one.
 */
function copyPrebuiltBackends(binDir, platform, log) {
  const from = join(PREBUILT, platform, "bins", platform);
  const backends = readdirSync(from).filter((name) => /^libggml-(cpu-.+|vulkan)\.so$/.test(name));
  const haveCpu = readdirSync(binDir).some((name) => name.startsWith("libggml-cpu-"));
  const wanted = backends.filter((name) => !(haveCpu && name.startsWith("libggml-cpu-")) && !existsSync(join(binDir, name)));
  for (const name of wanted) copyFileSync(join(from, name), join(binDir, name));
  if (wanted.length > 0) log(`llama-server backends from node-llama-cpp's ${platform} prebuilt: ${wanted.join(", ")}`);
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
  copyPrebuiltBackends(binDir, env.BENCH_LLAMA_VULKAN === "1" ? "linux-x64-vulkan" : "linux-x64", log);
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
