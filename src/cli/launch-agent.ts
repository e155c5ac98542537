/**
 * `kiln launch <agent>`: finds kiln on its address (or starts it in the background with a context that fits the
 * agent), points the agent at it — environment, arguments, generated config files in a kiln-owned directory —
 * prints what it set, and runs the agent in the foreground with the user's arguments.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Agent, AgentSetup, LaunchTarget } from "../launch/agent.js";
import { findBinary } from "../launch/find-binary.js";
import { launchPaths, probeServer, startBackgroundServer } from "../launch/kiln-server.js";
import { readLaunchFacts } from "../launch/model-facts.js";
import { fetchModels } from "./commands/ps.js";
import { UsageError } from "./report-error.js";

/** The model `kiln launch` serves when none is named and no server runs: a small coder model with tool calling. */
export const LAUNCH_DEFAULT_MODEL = "qwen2.5-coder-0.5b";

/** The largest context a started server gets: more costs memory and no agent here needs it. */
const MAX_CONTEXT = 32_768;

/** Flags of `kiln launch`. */
export interface LaunchOptions {
  model?: string;
  url: string;
  apiKey?: string;
  ctxSize?: number;
  home: string;
}

/** Finds or starts the server and returns where the agent should go. */
export async function prepareTarget(agent: Agent, options: LaunchOptions, log: (line: string) => void): Promise<LaunchTarget> {
  const url = options.url.replace(/\/+$/, "").replace(/\/v1$/, "");
  const apiKey = options.apiKey ?? process.env.KILN_API_KEY?.split(",")[0]?.trim() ?? "kiln";
  const configDir = join(options.home, "launch");
  const probe = await probeServer(url);
  if (probe.kind === "other") throw new UsageError(`${url} is in use by something that is not kiln (${probe.detail})`, "stop it, or pass --url <address of kiln serve>");
  if (probe.kind === "kiln") {
    if (probe.status !== "ok") throw new UsageError(`kiln at ${url} is not ready (${probe.status}${probe.message ? `: ${probe.message}` : ""})`, "wait for it to load its models, or restart it");
    const { model, contextSize } = await pickServedModel(url, apiKey, options.model);
    checkContext(agent, contextSize, model);
    log(`kiln launch: using kiln at ${url} (model ${model}, context ${contextSize} tokens)`);
    return { url, apiKey, model, contextSize, configDir };
  }
  const { resolveWithProgress, parseModelRef } = await import("../models/index.js");
  const ref = options.model ?? LAUNCH_DEFAULT_MODEL;
  const path = await resolveWithProgress(ref, {}, process.stderr);
  const facts = await readLaunchFacts(path);
  if (agent.needsTools && !facts.tools) {
    throw new UsageError(`${ref} cannot call tools (its chat template has none), and ${agent.title} works through tool calls`, `use a model with tool calling, e.g. --model ${LAUNCH_DEFAULT_MODEL}`);
  }
  const contextSize = options.ctxSize ?? Math.min(facts.contextLength ?? MAX_CONTEXT, MAX_CONTEXT);
  const model = parseModelRef(ref).name;
  checkContext(agent, contextSize, model);
  const { hostname, port } = new URL(url);
  log(`kiln launch: starting kiln serve in the background on ${url} (model ${model}, context ${contextSize} tokens; log ${launchPaths(options.home).log})`);
  const pid = await startBackgroundServer({ home: options.home, host: hostname, port: Number(port) || 80, model: `${model}=${path}`, contextSize }, url);
  log(`kiln launch: kiln serve is running (pid ${pid}); it keeps running after ${agent.title} exits — stop it with: kiln launch --stop`);
  return { url, apiKey, model, contextSize, configDir };
}

/** The model to use on a running server: the named one (which it must serve), else its default. */
async function pickServedModel(url: string, apiKey: string, ref: string | undefined): Promise<{ model: string; contextSize: number }> {
  const served = await fetchModels(url, apiKey);
  let wanted: (typeof served)[number] | undefined = served[0];
  if (ref) {
    const { parseModelRef } = await import("../models/index.js");
    const name = parseModelRef(ref).name;
    wanted = served.find((m) => m.id === name);
    if (!wanted) throw new UsageError(`kiln at ${url} does not serve ${name} (it serves ${served.map((m) => m.id).join(", ")})`, `use --model ${served[0]?.id ?? "<name>"}, or stop that server (kiln launch --stop, or Ctrl+C where it runs) to let kiln launch start one`);
  }
  if (!wanted) throw new UsageError(`kiln at ${url} serves no model`);
  return { model: wanted.id, contextSize: wanted.context_length ?? MAX_CONTEXT };
}

function checkContext(agent: Agent, contextSize: number, model: string): void {
  if (contextSize >= agent.minContext) return;
  throw new UsageError(`${model} is served with a ${contextSize}-token context; ${agent.title} needs at least ${agent.minContext}`, "use a model with a longer context (or a larger --ctx-size when kiln launch starts the server)");
}

/** Writes the setup's files and prints every setting, so a user can repeat them by hand. */
export function applySetup(agent: Agent, setup: AgentSetup, userArgs: string[], log: (line: string) => void): void {
  for (const file of setup.files) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.content);
    log(`  wrote ${file.path}`);
  }
  for (const name of setup.unset) log(`  unset ${name}`);
  for (const [name, value] of Object.entries(setup.env)) log(`  ${name}=${quote(value)}`);
  log(`  ${[agent.binary, ...setup.args, ...userArgs].map(quote).join(" ")}`);
}

/** Runs the agent in the foreground (this terminal); resolves with its exit code. */
export function runAgent(agent: Agent, setup: AgentSetup, userArgs: string[]): Promise<number> {
  const binary = findBinary(agent.binary);
  if (!binary) throw new UsageError(`${agent.title} is not installed (no \`${agent.binary}\` on PATH)`, `install it with: ${agent.install}`);
  // PWD as well: opencode takes its project folder from it, and a parent that changed folders may have left it stale.
  const env: NodeJS.ProcessEnv = { ...process.env, PWD: process.cwd(), ...setup.env };
  for (const name of setup.unset) delete env[name];
  const child = spawn(binary, [...setup.args, ...userArgs], { env, stdio: "inherit" });
  // The agent owns the terminal: Ctrl+C reaches it directly; this process just waits for it.
  const ignore = () => undefined;
  process.on("SIGINT", ignore);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      process.off("SIGINT", ignore);
      resolve(code ?? (signal ? 128 + 2 : 1));
    });
  });
}

function quote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
