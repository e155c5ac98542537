/**
 * Flag parsing shared by the commands that load a model or sample from one (`run`, `chat`, `serve`): the value
 * parsers check ranges at parse time, so a bad flag fails with exit code 1 before anything heavy loads.
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import { FLASH_ATTENTION_CHOICES, type FlashAttentionChoice, type GpuChoice, type GpuLayersChoice, type SamplingOptions } from "../engine/index.js";
import { DEFAULT_MODEL } from "../models/refs.js";

/** Parsed sampling flags (`--temperature`, `--top-p`, `--top-k`, `--seed`). */
export interface SamplingFlags {
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
}

/** The backends `--backend` offers for local models (the engine's registry may know more). */
export type LocalBackendName = "llama-cpp" | "webgpu";

/** `--gpu` values: llama.cpp's GPU backend, `auto`, or `none` (the CPU only). */
export const GPU_FLAG_VALUES = ["auto", "cuda", "vulkan", "metal", "none"] as const;
export type GpuFlag = (typeof GPU_FLAG_VALUES)[number];

/**
 * Parsed model flags (`--model`, `--threads`, `--ctx-size`, `--gpu`, `--gpu-layers`, `--flash-attention`,
 * `--draft-model`, `--draft-max`).
 */
export interface ModelFlags extends DraftFlags {
  model?: string;
  threads?: number;
  ctxSize?: number;
  backend?: LocalBackendName;
  gpu?: GpuFlag;
  gpuLayers?: GpuLayersChoice;
  flashAttention?: FlashAttentionChoice;
}

/** Speculative decoding flags. */
export interface DraftFlags {
  draftModel?: string;
  draftMax?: number;
}

/** Adds `--draft-model` and `--draft-max` (speculative decoding on the llama.cpp backend). */
export function addDraftOptions(command: Command): Command {
  return command
    .option("--draft-model <ref>", "a smaller model with the same vocabulary that drafts tokens for the model, which checks them several at a time (speculative decoding; the output stays the model's own)")
    .option("--draft-max <n>", "most tokens the draft model proposes per step (default 8)", parseNumberIn(1, 64, true));
}

/** `--backend`: where local models run. */
export function backendOption(): Option {
  return new Option("--backend <name>", "where local models run: llama-cpp, or webgpu (kiln's own GPU kernels; llama-family GGUFs)").choices(["llama-cpp", "webgpu"]);
}

/** `--gpu`: which GPU backend llama.cpp uses. */
export function gpuOption(): Option {
  return new Option("--gpu <backend>", "llama.cpp's GPU backend: auto (the best that works here, else the CPU), cuda, vulkan, metal, or none (the CPU only)").choices(GPU_FLAG_VALUES);
}

/** `--gpu-layers`: how much of each model llama.cpp offloads. */
export function gpuLayersOption(): Option {
  return new Option("--gpu-layers <n>", "model layers on the GPU: auto (as many as fit beside the context; default), max (all, else an error), or a number (0 = the CPU)").argParser(parseGpuLayers);
}

/** `--flash-attention`: llama.cpp's flash attention, left to llama.cpp by default. */
export function flashAttentionOption(): Option {
  return new Option("--flash-attention <mode>", "llama.cpp's flash attention: auto (llama.cpp turns it on wherever the device runs it, as llama-server does; default), on, or off").choices(FLASH_ATTENTION_CHOICES);
}

/** A commander value parser for `--gpu-layers`: auto, max or a count of layers. */
export function parseGpuLayers(value: string): GpuLayersChoice {
  const text = value.trim().toLowerCase();
  if (text === "auto" || text === "max") return text;
  if (/^\d+$/.test(text) && Number(text) <= 100_000) return Number(text);
  throw new InvalidArgumentError("expected auto, max or a number of layers (0 = the CPU)");
}

/** The engine's GPU choice for a `--gpu` value (`none`: the CPU only). */
export function toGpuChoice(flag: GpuFlag | undefined): GpuChoice | undefined {
  return flag === "none" ? false : flag;
}

/** A commander value parser for a number in [min, max]; integers only when `integer` is set. */
export function parseNumberIn(min: number, max: number, integer = false): (value: string) => number {
  return (value) => {
    const number = value.trim() === "" ? Number.NaN : Number(value);
    const valid = Number.isFinite(number) && number >= min && number <= max && (!integer || Number.isInteger(number));
    if (!valid) throw new InvalidArgumentError(`expected ${integer ? "an integer" : "a number"} from ${min} to ${max}`);
    return number;
  };
}

const SIZE_UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Bytes of a size such as `8G`, `500MiB`, `1.5gb` or `1048576` (binary units); undefined when malformed. */
export function toBytes(value: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(value);
  if (!match) return undefined;
  return Math.round(Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!);
}

/** A commander value parser for a size in bytes (`8G`, `500M`, `0`). */
export function parseSize(value: string): number {
  const bytes = toBytes(value);
  if (bytes === undefined) throw new InvalidArgumentError("expected a size such as 8G, 500M or 0");
  return bytes;
}

/** A commander value parser for a repeatable flag: collects every value in order. */
export function collectValues(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Adds `--temperature`, `--top-p`, `--top-k` and `--seed`. */
export function addSamplingOptions(command: Command): Command {
  return command
    .option("--temperature <x>", "sampling temperature, 0 = greedy (0 to 2)", parseNumberIn(0, 2))
    .option("--top-p <p>", "nucleus sampling: keep tokens within this probability mass (0 to 1)", parseNumberIn(0, 1))
    .option("--top-k <k>", "keep only the k most likely tokens (0 = off)", parseNumberIn(0, 1_000_000, true))
    .option("--seed <n>", "random seed, for repeatable sampling", parseNumberIn(0, 2 ** 32 - 1, true));
}

/** Help for `--ctx-size`. */
export const CTX_SIZE_HELP = "context size per sequence in tokens (default: the largest up to the model's that fits the free memory; at most 32768 on the CPU)";

/** Adds `--model`, `--threads`, `--ctx-size`, `--backend`, `--gpu`, `--gpu-layers`, `--flash-attention` and the draft flags. */
export function addModelOptions(command: Command): Command {
  command
    .option("-m, --model <ref>", `model name, .gguf path or reference (default: ${DEFAULT_MODEL})`)
    .option("--threads <n>", "CPU threads for generation (default: all cores)", parseNumberIn(1, 1024, true))
    .option("--ctx-size <n>", CTX_SIZE_HELP, parseNumberIn(256, 1_048_576, true))
    .addOption(backendOption())
    .addOption(gpuOption())
    .addOption(gpuLayersOption())
    .addOption(flashAttentionOption());
  return addDraftOptions(command);
}

/** Adds the flags every generating command shares: system prompt, model, max tokens, sampling and stops. */
export function addGenerationOptions(command: Command, maxTokensFallback: number): Command {
  command.option("--system <text>", "system prompt");
  addModelOptions(command);
  addMaxTokensOption(command, maxTokensFallback);
  addSamplingOptions(command);
  return command.option("--stop <text>", "stop sequence (repeatable)", collectValues);
}

/** Adds `--max-tokens` (a cap on generated tokens). */
export function addMaxTokensOption(command: Command, fallback: number): Command {
  return command.option("--max-tokens <n>", `maximum tokens to generate (default: ${fallback})`, parseNumberIn(1, 1_048_576, true));
}

/** Sampling options for a ChatRequest, leaving out what was not given. */
export function toSamplingOptions(flags: SamplingFlags): SamplingOptions {
  const sampling: SamplingOptions = {};
  if (flags.temperature !== undefined) sampling.temperature = flags.temperature;
  if (flags.topP !== undefined) sampling.topP = flags.topP;
  if (flags.topK !== undefined) sampling.topK = flags.topK;
  if (flags.seed !== undefined) sampling.seed = flags.seed;
  return sampling;
}

/**
 * Makes commander's own errors (unknown flag, bad value, missing argument) look like every other kiln error:
 * `kiln: <message>` and a hint pointing at the command's help.
 */
export function formatFlagErrors(command: Command): Command {
  return command.showHelpAfterError(false).configureOutput({
    outputError: (text, write) => {
      const message = text.trim().replace(/^error:\s*/, "");
      write(`kiln: ${message}\nhint: run \`kiln ${command.name()} --help\` for usage\n`);
    },
  });
}
