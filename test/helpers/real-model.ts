/**
 * Where the real models are for tests: the default model (SmolLM2-135M-Instruct Q4_1) and catalog models, in the
 * store where `.ci/run` and the README set-up pull them; KILN_TEST_MODEL overrides the default model's path.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export function realModelPath(): string {
  const fromEnv = process.env.KILN_TEST_MODEL;
  if (fromEnv) return fromEnv;
  const home = process.env.KILN_HOME ?? join(homedir(), ".kiln");
  const path = join(home, "models", "smollm2-135m.gguf");
  if (!existsSync(path)) throw new Error(`The default model is missing at ${path}: run \`npm run setup\` first`);
  return path;
}

/** The store path of a catalog model, which must have been pulled (`kiln models pull <name>`). */
export function catalogModelPath(name: string): string {
  const home = process.env.KILN_HOME ?? join(homedir(), ".kiln");
  const path = join(home, "models", `${name}.gguf`);
  if (!existsSync(path)) throw new Error(`The model ${name} is missing at ${path}: run \`node bin/kiln.js models pull ${name}\` first`);
  return path;
}

/**
 * llama.cpp threads for real-model tests: one by default, since test files run in parallel forks on few cores and
 * threads waiting on each other slow decoding by an order of magnitude. KILN_TEST_THREADS overrides it.
 */
export function testThreads(): number {
  return Number(process.env.KILN_TEST_THREADS ?? 1);
}

/**
 * The real coder model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M), or undefined when this machine lacks it (its tests
 * skip, saying so). KILN_TEST_CODER_MODEL overrides; else the store's `qwen2.5-coder-0.5b.gguf` (`kiln models pull
 * qwen2.5-coder-0.5b`).
 */
export function coderModelPath(): string | undefined {
  return optionalModel("KILN_TEST_CODER_MODEL", "qwen2.5-coder-0.5b", "coder-model tests");
}

/**
 * The model the agent test drives Claude Code with (Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the 0.5B model finished
 * the task in about one try in five), or undefined when this machine lacks it. KILN_TEST_AGENT_MODEL overrides; else
 * the store's `qwen2.5-coder-1.5b.gguf` (`kiln models pull qwen2.5-coder-1.5b`).
 */
export function agentModelPath(): string | undefined {
  return optionalModel("KILN_TEST_AGENT_MODEL", "qwen2.5-coder-1.5b", "the agent test");
}

function optionalModel(variable: string, name: string, tests: string): string | undefined {
  const home = process.env.KILN_HOME ?? join(homedir(), ".kiln");
  const path = [process.env[variable], join(home, "models", `${name}.gguf`)].find((p) => p && existsSync(p));
  if (!path) console.warn(`${tests} skipped: set ${variable}, or run \`node bin/kiln.js models pull ${name}\``);
  return path;
}
