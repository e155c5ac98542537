/**
 * The two servers under test, started with the same settings: threads, context per sequence, parallel sequences,
 * default flash-attention choice ("auto" on both), 127.0.0.1 only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureLlamaCpp } from "./llama-cpp-build.js";
import { findFreePort, readLoadedCpuVariant, startServer } from "./processes.js";

const KILN_BIN = fileURLToPath(new URL("../../bin/kiln.js", import.meta.url));

/**
 * Starts `kiln serve` on the benchmark model.
 * @param {import("./config.js").Settings} settings
 * @param {{ parallel?: number, prefixCache?: boolean, home?: string, model?: string, extraArgs?: string[], bin?: string, nodeArgs?: string[], env?: Record<string, string> }} [overrides] `home`: the KILN_HOME
 *   (default: a fresh one, so every start begins with an empty prefix cache, in RAM and on disk); `model`: a model
 *   reference, by default `name=<settings.modelPath>`; `bin`: another checkout's bin/kiln.js (before/after comparisons)
 */
export async function startKiln(settings, { parallel = settings.parallel, prefixCache = true, home, model = `${settings.modelName}=${settings.modelPath}`, extraArgs = [], bin = KILN_BIN, nodeArgs = [], env = {} } = {}) {
  const kilnHome = home ?? mkdtempSync(join(tmpdir(), "kiln-bench-home-"));
  const port = await findFreePort();
  const args = [...nodeArgs, bin, "serve", "--host", "127.0.0.1", "--port", String(port), "--model", model,
    "--parallel", String(parallel), "--ctx-size", String(settings.ctxPerSequence), "--threads", String(settings.threads),
    "--log-level", "error"];
  if (!prefixCache) args.push("--no-prefix-cache");
  args.push(...extraArgs);
  const server = await startServer({
    name: `kiln (parallel ${parallel}${prefixCache ? "" : ", no prefix cache"})`,
    command: process.execPath, args, env: { ...env, KILN_HOME: kilnHome }, port, readyPath: "/health",
  });
  const stop = async () => {
    await server.stop();
    if (!home) rmSync(kilnHome, { recursive: true, force: true });
  };
  // The id kiln serves the model under (a .gguf path is served by its file name), for the requests' `model` field.
  const listed = await (await fetch(`${server.baseUrl}/v1/models`)).json();
  return { ...server, stop, cpuVariant: await readLoadedCpuVariant(server.pid), model: listed.data?.[0]?.id ?? model.split("=")[0], extra: {} };
}

/**
 * Starts llama-server with `parallel` slots of ctxPerSequence tokens each (its -c is the total, split per slot).
 * @param {import("./config.js").Settings} settings
 * @param {{ server: string }} llamaCpp
 * @param {{ parallel?: number, modelPath?: string, extraArgs?: string[] }} [overrides]
 */
export async function startLlamaServer(settings, llamaCpp, { parallel = settings.parallel, modelPath = settings.modelPath, extraArgs = [] } = {}) {
  const port = await findFreePort();
  const args = ["-m", modelPath, ...extraArgs, "--host", "127.0.0.1", "--port", String(port),
    "-t", String(settings.threads), "-tb", String(settings.threads), "-c", String(settings.ctxPerSequence * parallel),
    "-np", String(parallel), "--jinja", "--no-webui"];
  const server = await startServer({ name: `llama-server (parallel ${parallel})`, command: llamaCpp.server, args, port,
    readyPath: "/health" });
  return {
    ...server, cpuVariant: await readLoadedCpuVariant(server.pid), model: settings.modelName,
    extra: { cache_prompt: true },
  };
}

/**
 * The sides an investigation alternates: this checkout's kiln, another kiln build when `KILN_BEFORE` names its
 * bin/kiln.js, and llama-server, each `{ label, server }` ("kiln", "kiln before", "llama-server").
 * @param {import("./config.js").Settings} settings
 */
export async function startComparedSides(settings, env = process.env) {
  const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log: () => {} });
  return [
    { label: "kiln", server: await startKiln(settings) },
    ...(env.KILN_BEFORE ? [{ label: "kiln before", server: await startKiln(settings, { bin: env.KILN_BEFORE }) }] : []),
    { label: "llama-server", server: await startLlamaServer(settings, llamaCpp) },
  ];
}
