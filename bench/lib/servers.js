/**
 * The two servers under test, started with the same settings: threads, context per sequence, parallel sequences,
 * default flash-attention choice ("auto" on both), 127.0.0.1 only.
 */
import { fileURLToPath } from "node:url";
import { findFreePort, readLoadedCpuVariant, startServer } from "./processes.js";

const KILN_BIN = fileURLToPath(new URL("../../bin/kiln.js", import.meta.url));

/**
 * Starts `kiln serve` on the benchmark model.
 * @param {import("./config.js").Settings} settings
 * @param {{ parallel?: number, prefixCache?: boolean }} [overrides]
 */
export async function startKiln(settings, { parallel = settings.parallel, prefixCache = true } = {}) {
  const port = await findFreePort();
  const args = [KILN_BIN, "serve", "--host", "127.0.0.1", "--port", String(port), "--model", settings.modelName,
    "--parallel", String(parallel), "--ctx-size", String(settings.ctxPerSequence), "--threads", String(settings.threads),
    "--log-level", "error"];
  if (!prefixCache) args.push("--no-prefix-cache");
  const server = await startServer({
    name: `kiln (parallel ${parallel}${prefixCache ? "" : ", no prefix cache"})`,
    command: process.execPath, args, env: { KILN_HOME: settings.kilnHome }, port, readyPath: "/health",
  });
  // The id kiln serves the model under (a .gguf path is served by its file name), for the requests' `model` field.
  const listed = await (await fetch(`${server.baseUrl}/v1/models`)).json();
  return { ...server, cpuVariant: await readLoadedCpuVariant(server.pid), model: listed.data?.[0]?.id ?? settings.modelName, extra: {} };
}

/**
 * Starts llama-server with `parallel` slots of ctxPerSequence tokens each (its -c is the total, split per slot).
 * @param {import("./config.js").Settings} settings
 * @param {{ server: string }} llamaCpp
 */
export async function startLlamaServer(settings, llamaCpp, { parallel = settings.parallel } = {}) {
  const port = await findFreePort();
  const args = ["-m", settings.modelPath, "--host", "127.0.0.1", "--port", String(port),
    "-t", String(settings.threads), "-tb", String(settings.threads), "-c", String(settings.ctxPerSequence * parallel),
    "-np", String(parallel), "--jinja", "--no-webui"];
  const server = await startServer({ name: `llama-server (parallel ${parallel})`, command: llamaCpp.server, args, port,
    readyPath: "/health" });
  return {
    ...server, cpuVariant: await readLoadedCpuVariant(server.pid), model: settings.modelName,
    extra: { cache_prompt: true },
  };
}
