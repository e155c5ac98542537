/** Where bench:webgpu's results go: bench/results/<date>-<host>-webgpu<kind>[-model][-BENCH_TAG].{json,md}. */
import { mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";

/** Writes one result as JSON and Markdown (the default model's name is left out of the file name). */
export function writeWebGpuResult(kind, modelPath, started, result, markdown) {
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const model = basename(modelPath, ".gguf");
  const tag = process.env.BENCH_TAG ? `-${process.env.BENCH_TAG.replace(/[^\w.-]/g, "")}` : "";
  const name = `${started.toISOString().slice(0, 10)}-${hostname().split(".")[0]}-webgpu${kind}${model === "smollm2-135m" ? "" : `-${model}`}${tag}`;
  writeFileSync(`${dir}${name}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${dir}${name}.md`, markdown);
}
