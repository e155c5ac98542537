/** The machine description committed next to every result: what the figures were measured on. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, hostname, loadavg, release, totalmem } from "node:os";

/** CPU flags that decide which ggml CPU variant loads (and so the kernels used). */
const RELEVANT_FLAGS = [
  "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512_vbmi", "avx512_vnni",
  "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16",
];

/** Reads the CPU model and flags from /proc/cpuinfo (Linux); falls back to os.cpus(). */
function readCpu() {
  let text = "";
  try {
    text = readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return { model: cpus()[0]?.model ?? "unknown", flags: [] };
  }
  const field = (name) => text.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, "m"))?.[1]?.trim();
  const flags = new Set((field("flags") ?? "").split(/\s+/));
  return {
    model: field("model name") ?? "unknown",
    family: field("cpu family"),
    modelNumber: field("model"),
    stepping: field("stepping"),
    flags: RELEVANT_FLAGS.filter((f) => flags.has(f)),
    hypervisor: flags.has("hypervisor"),
  };
}

/** Reads a JSON file inside an installed package (the package's exports map hides package.json from require). */
function readPackageJson(name, file) {
  try {
    return JSON.parse(readFileSync(new URL(`../../node_modules/${name}/${file}`, import.meta.url), "utf8"));
  } catch {
    return undefined;
  }
}

function tryRun(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 5000 }).trim();
  } catch {
    return undefined;
  }
}

/** Describes this machine and the software under test. */
export function describeMachine() {
  return {
    host: hostname(),
    os: `${process.platform} ${release()}`,
    cpu: readCpu(),
    logicalCpus: cpus().length,
    availableParallelism: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadAverageAtStart: loadavg().map((v) => Math.round(v * 100) / 100),
    node: process.version,
    nodeLlamaCpp: readPackageJson("node-llama-cpp", "package.json")?.version,
    /** The llama.cpp release node-llama-cpp's prebuilt binaries (and its source bundle) come from. */
    nodeLlamaCppLlamaRelease: readPackageJson("node-llama-cpp", "llama/binariesGithubRelease.json")?.release,
    compiler: tryRun("cc", ["--version"])?.split("\n")[0],
  };
}
